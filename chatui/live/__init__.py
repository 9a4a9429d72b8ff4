"""Live updates: what a commit sends to every open browser.

`broadcast` renders a committed change once (`frames`, with the kept tail and batch
caches) and hands it to the channel layer; `consumers` are the viewers' sockets;
`revocation` closes sockets whose session or permission went away.
"""
