"""connector.spark"""
