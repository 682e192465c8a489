"""Rami clients: the terminal client, the bot runner and the bot kit."""
