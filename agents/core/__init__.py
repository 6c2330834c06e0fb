"""The base every layer of memevo may import (``memevo.core``): errors, the pydantic base, config reading, and
files written atomically or read with a remedy when damaged. It imports nothing else of memevo."""
