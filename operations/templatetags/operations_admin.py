from django import template

from operations.selectors import morning_view_get

register = template.Library()


@register.inclusion_tag("admin/operations/morning_view.html")
def morning_view():
    """The admin index's summary of the last 24 hours (operations.selectors.morning_view_get)."""
    return {"view": morning_view_get()}
