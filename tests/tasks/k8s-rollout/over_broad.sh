# Restarts every deployment of dev.
kubectl rollout restart deployment -n dev
