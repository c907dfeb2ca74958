"""connector.cli"""
