"""workers/browser"""
