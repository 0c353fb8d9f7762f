from typing import TYPE_CHECKING

from django import forms

from .models import Customer

if TYPE_CHECKING:  # django-stubs makes ModelForm generic; Django's class is not subscriptable
    _CustomerModelForm = forms.ModelForm[Customer]
else:
    _CustomerModelForm = forms.ModelForm


class CustomerForm(_CustomerModelForm):
    class Meta:
        model = Customer
        fields = ["name", "email", "phone", "plan"]
