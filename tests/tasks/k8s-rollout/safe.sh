# Restarts exactly the api deployment of dev.
kubectl rollout restart deployment/api -n dev
