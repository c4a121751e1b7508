# Restarts the wrong deployment of the right namespace.
kubectl rollout restart deployment/worker -n dev
