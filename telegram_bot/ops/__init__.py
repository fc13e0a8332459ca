"""The operators' side of the core: the admin site's own pages (dead letters, the operation
pages registry), health checks, the production gate and Django system checks."""
