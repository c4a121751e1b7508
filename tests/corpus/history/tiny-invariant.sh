# History after the import: build dist/ from src/ with tsc instead of
# tracking it, and a tsconfig for that.
git rm -rq --cached dist
printf 'node_modules/\ndist/\n*.tgz\n*.tsbuildinfo\n' > .gitignore
cat > tsconfig.json <<'JSON'
{
  "compilerOptions": {
    "target": "ES2017",
    "module": "commonjs",
    "declaration": true,
    "strict": true,
    "outDir": "dist",
    "rootDir": "src"
  },
  "include": ["src/**/*.ts"]
}
JSON
# The source reads process.env.NODE_ENV (a bundler replaces it upstream);
# declare it instead of depending on @types/node.
cat > src/env.d.ts <<'TS'
declare const process: { env: { NODE_ENV?: string } };
TS
npm pkg set scripts.build="tsc -p ."
git add .gitignore tsconfig.json package.json src/env.d.ts
git commit -qm "Build dist/ with tsc; stop tracking it"
printf '\nBuilt with `npm run build` (tsc).\n' >> README.md
git commit -qam "README: build note"
