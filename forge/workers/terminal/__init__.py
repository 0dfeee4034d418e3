"""workers/terminal"""
