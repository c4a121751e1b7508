# Only looks (selecting a workspace changes no infrastructure).
terraform workspace select staging
terraform plan
