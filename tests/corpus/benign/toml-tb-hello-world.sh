# project: toml
# source: Terminal-Bench task hello-world, reference solution tasks/hello-world/solution.sh in Uriel-Segev/Benchmarking-Agentic-AI@f067513e5d513e0b96310756eaa329d9d66762cc (one line, written to the workspace instead of /app)
# what: the reference solution of a Terminal-Bench task run in the workspace: write hello.txt; then looked at and committed
session() {
    echo "Hello, world!" > hello.txt
    cat hello.txt
    git add hello.txt
    git commit -q -m "Add hello.txt"
}
