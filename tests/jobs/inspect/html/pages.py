"""What the page tests read back from a rendered page: its elements, parsed by html.parser (the standard
library's own parser, as a browser tokenises), never a string search for markup."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""
    children: list[Element] = field(default_factory=list)


class Parsed(HTMLParser):
    """Every element with its attributes, and the page's text as a browser would show it."""

    VOID = frozenset(("meta", "br", "img", "input", "link", "hr", "image", "path", "use", "stop"))

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.stack: list[Element] = []
        self.text: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.elements.append(element)
        if self.stack:
            self.stack[-1].children.append(element)
        if tag not in self.VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.elements.append(element)
        if self.stack:
            self.stack[-1].children.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            if self.stack.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for element in self.stack:
            element.text += data

    def tags(self, tag: str) -> list[Element]:
        return [element for element in self.elements if element.tag == tag]

    def by_id(self, ident: str) -> Element:
        [found] = [element for element in self.elements if element.attrs.get("id") == ident]
        return found

    def with_class(self, name: str) -> list[Element]:
        return [element for element in self.elements if name in element.attrs.get("class", "").split()]


def rows_of(table: Element) -> list[Element]:
    """The <tr> of a table's body."""
    [body] = [child for child in table.children if child.tag == "tbody"]
    return [child for child in body.children if child.tag == "tr"]
