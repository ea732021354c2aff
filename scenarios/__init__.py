"""scenarios: data only"""
