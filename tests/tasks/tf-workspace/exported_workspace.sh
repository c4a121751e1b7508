# Destroys the right resource in the wrong (production) workspace, chosen
# by an exported variable: no argument names it, the kernel's record of
# terraform's environment does.
export TF_WORKSPACE=prod
terraform destroy -target=terraform_data.scratch -auto-approve
