"""The configuration: config.yaml to typed settings, its checks, the home's layout, corvid init."""
