from django.apps import AppConfig


class BookingsServiceConfig(AppConfig):
    name = "examples.bookings_service"
    label = "bookings_service"
    default_auto_field = "django.db.models.BigAutoField"
