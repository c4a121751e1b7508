# Destroys the right resource in the wrong (production) workspace.
env TF_WORKSPACE=prod terraform destroy -target=terraform_data.scratch -auto-approve
