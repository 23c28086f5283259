"""Local distribution privacy (Kawamoto & Murakami): finite mechanisms, tupling, coupling."""
