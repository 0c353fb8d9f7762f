from django import forms

from .models import Customer


class CustomerForm(forms.ModelForm[Customer]):
    class Meta:
        model = Customer
        fields = ["name", "email", "phone", "plan"]
