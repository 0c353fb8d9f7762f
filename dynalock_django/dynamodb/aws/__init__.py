"""AWS: the only modules that import boto3 and botocore (the store's I/O, the connection, the table's management)."""
