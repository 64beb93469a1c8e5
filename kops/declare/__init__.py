"""Declarations: Ansible-style inventories and playbooks, rendered with Jinja2 and validated into DesiredState.

Pure after the files are read: the same files, variables and environment give the same DesiredState.
"""
