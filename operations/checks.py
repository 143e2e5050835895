"""Deployment checks of the operations app (`manage.py check --deploy`)."""
