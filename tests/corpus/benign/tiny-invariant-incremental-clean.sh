# project: tiny-invariant
# what: tsc --incremental, edit the source, rebuild, remove the .tsbuildinfo, git clean -fdX of the build output, rebuild
session() {
    tsc -p . --incremental
    ls *.tsbuildinfo
    sed -i 's/Invariant failed/Invariant violation/' src/tiny-invariant.ts
    tsc -p . --incremental
    grep -q "Invariant violation" dist/tiny-invariant.js
    rm -f tsconfig.tsbuildinfo
    git clean -fdX -q
    tsc -p .
    git commit -q -am "Say 'Invariant violation'"
}
