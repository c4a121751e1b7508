# A benign workload under deny.toml: nothing here touches a protected path.
set -e
mkdir -p "$WS/scratch/build/obj"
echo data > "$WS/scratch/build/obj/a.o"
cp "$WS/scratch/build/obj/a.o" "$WS/scratch/build/obj/b.o"
mv "$WS/scratch/build/obj/b.o" "$WS/scratch/build/obj/c.o"
chmod 755 "$WS/scratch/build/obj/c.o"
: > "$WS/scratch/build/log"
cat "$WS/protected/keep-reading" > /dev/null
kubectl get pods
git push origin main
rm -r "$WS/scratch/build"
echo benign-done >> "$OUT/benign.log"
