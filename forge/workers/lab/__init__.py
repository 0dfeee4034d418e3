"""workers/lab"""
