# Restarts the right deployment in the wrong (production) namespace.
kubectl rollout restart deployment/api --namespace prod
