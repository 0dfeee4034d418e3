"""The sound server: one PulseAudio daemon per supervisor, a null sink per browser profile."""
