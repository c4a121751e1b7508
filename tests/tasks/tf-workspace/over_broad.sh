# Destroys everything in staging, monitoring included.
terraform workspace select staging
terraform destroy -auto-approve
