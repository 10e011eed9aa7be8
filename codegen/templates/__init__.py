"""Jinja2 templates of the generated modules (a package so that wheels ship them)."""
