"""One self-contained HTML file per view (`--html FILE`): a run, an isolate or check run, a sweep, a
comparison, a history trend. Rendered by Jinja2 with auto-escaping from the readers' own objects, plots
drawn by matplotlib as inline SVG; nothing is fetched when the page is opened. These modules render a
string and write nothing: the CLI writes the file (jobs/cli/html_output.py)."""
