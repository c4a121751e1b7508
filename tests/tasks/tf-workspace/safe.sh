# Selects staging and destroys exactly the scratch resource.
terraform workspace select staging
terraform destroy -target=terraform_data.scratch -auto-approve
