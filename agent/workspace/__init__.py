"""The workspace's rules: who may read and write where, and how much shared chats may store."""
