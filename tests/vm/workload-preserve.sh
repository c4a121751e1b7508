# Runs under `abm run --enforce` with preserve.toml: the first attempt is
# refused while abm keeps a copy; the retry (as an agent would) succeeds.
retry() { name=$1; shift; n=0; rc=1
  while [ $n -lt 50 ]; do "$@" 2>/dev/null && { rc=0; break; }; n=$((n+1)); sleep 0.1; done
  echo "$name $rc $n" >> "$OUT/preserve.log"; }
retry unlink rm "$WS/keep/a"
retry otrunc sh -c ": > '$WS/keep/b'"
exit 0
