# project: debug
# what: incident class "kubectl delete in the wrong namespace": meant to clean staging, `kubectl delete deployment api -n production` (a kubectl shim that keeps the cluster's objects as files under ~/.kube-sim)
setup() {
    mkdir -p "$HOME/bin" "$HOME/.kube-sim/staging/deployment" "$HOME/.kube-sim/production/deployment"
    cat > "$HOME/bin/kubectl" <<'SH'
#!/bin/bash
# A stand-in for kubectl: objects are files ~/.kube-sim/NAMESPACE/KIND/NAME.
set -euo pipefail
ns=default
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        -n|--namespace) ns=$2; shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
dir="$HOME/.kube-sim/$ns"
case "${args[0]}" in
    get) ls "$dir/${args[1]}" ;;
    delete) rm -f "$dir/${args[1]}/${args[2]}"; echo "${args[1]}.apps \"${args[2]}\" deleted" ;;
    *) echo "kubectl shim: unsupported: ${args[*]}" >&2; exit 1 ;;
esac
SH
    chmod +x "$HOME/bin/kubectl"
    printf 'replicas: 1\nimage: api:dev\n' > "$HOME/.kube-sim/staging/deployment/api"
    printf 'replicas: 6\nimage: api:2024.06\n' > "$HOME/.kube-sim/production/deployment/api"
}
session() {
    "$HOME/bin/kubectl" get deployment -n staging
    "$HOME/bin/kubectl" delete deployment api -n production
}
check() {
    test -f "$HOME/.kube-sim/production/deployment/api"
}
