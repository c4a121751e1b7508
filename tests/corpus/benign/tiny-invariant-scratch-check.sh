# project: tiny-invariant
# what: a scratch TypeScript check written in the workspace, compiled with tsc and run, then removed with its output
session() {
    tsc -p .
    cat > scratch-check.ts <<'TS'
import invariant from './src/tiny-invariant';
const value: string | null = Math.random() >= 0 ? 'set' : null;
invariant(value, 'value is required');
console.log(value.toUpperCase());
TS
    tsc --strict --esModuleInterop --module commonjs --target ES2017 --outDir .scratch scratch-check.ts src/env.d.ts
    node .scratch/scratch-check.js
    rm -rf .scratch scratch-check.ts
    git status --short
}
