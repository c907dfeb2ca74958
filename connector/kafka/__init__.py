"""connector.kafka"""
