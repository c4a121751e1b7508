# Destroys the wrong resource of the right workspace.
terraform workspace select staging
terraform destroy -target=terraform_data.cache -auto-approve
