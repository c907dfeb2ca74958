"""connector.decode"""
