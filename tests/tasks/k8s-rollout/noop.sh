# Only looks.
kubectl get deployments -n dev
kubectl rollout status deployment/api -n dev
