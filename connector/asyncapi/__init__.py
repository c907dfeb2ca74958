"""connector.asyncapi"""
