"""Current-era framework modules: today's releases on CPython 3.11, one module per framework.

They may use anything their framework's environment offers; only they are exempt from the payload's
CPython 3.6 gate (images/compat.py).
"""
