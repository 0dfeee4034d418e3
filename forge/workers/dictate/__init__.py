"""workers/dictate"""
