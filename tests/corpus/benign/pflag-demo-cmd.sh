# project: pflag
# what: write an example command under cmd/demo, go build to bin/, go run it, commit it, rm -rf bin
session() {
    mkdir -p cmd/demo
    cat > cmd/demo/main.go <<'GO'
package main

import (
	"fmt"

	flag "github.com/spf13/pflag"
)

func main() {
	name := flag.StringP("name", "n", "world", "who to greet")
	times := flag.IntP("times", "t", 1, "how many times")
	flag.Parse()
	for i := 0; i < *times; i++ {
		fmt.Printf("hello, %s\n", *name)
	}
}
GO
    gofmt -l cmd || true
    go build -o bin/demo ./cmd/demo
    ./bin/demo --name corpus -t 2
    go run ./cmd/demo -n again
    git add cmd/demo/main.go
    git commit -q -m "Add a demo command"
    rm -rf bin
    git status --short
}
