"""The web app's pages: Streamlit runs each file as a script (see ``app.py``); this file only
makes the folder a package, so that installing ragloom ships the pages with it."""
