"""Private helpers shared by every package: nothing here knows about records."""
