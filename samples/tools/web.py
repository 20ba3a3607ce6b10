"""Web samples: AgentLab/BrowserGym step records (one JSON file per trajectory).

Each page is modelled once as a tree of `El` elements; `pruned_html`, `dom_txt`,
`axtree_txt` and `extra_element_properties` are all rendered from that tree, so
the `bid`s, values and checked/selected states agree across representations.

Axtree lines follow BrowserGym's flattening: `[bid] role 'name'`, then
` value='…'` when the node has a value, then `, clickable, visible` and the
remaining AX properties (`focused`, `required`, `checked='true'`,
`expanded=False`, `url='…'`); generic containers are skipped and their
children move up one level; StaticText that repeats its parent's name is left
out. HTML is BeautifulSoup-prettify style (one-space indent, attributes sorted).
"""

import html as htmlmod
import json
import os

from common import Node, drop_line, prediction_row, replace_once, write_jsonl, write_text

VOID = {"input", "img", "br", "hr", "meta", "link"}


class El(Node):
    """One DOM element (or a text node when built with `text()`)."""

    FIELDS = dict(role=None, name=None, value=None, props=(), attrs=None, vis=True, click=False, key=None,
                  bid=None, h=28)

    def __init__(self, tag, *children, **fields):
        super().__init__(children, fields)
        self.tag = tag
        self.name = self.name if self.name is not None else ""
        self.props = list(self.props)
        self.attrs = dict(self.attrs or {})
        self.bbox = None


class Page:
    """A rendered page: title, url, body children; bids assigned in DOM order."""

    def __init__(self, title, url, body, head_extra=3, first_bid=None):
        self.title = title
        self.url = url
        self.body = body
        self.keys = {}
        counter = [3 + head_extra]  # 0 html, 1 head, 2 title, then link/script tags
        self.body_bid = str(counter[0])
        counter[0] += 1
        if first_bid is not None:
            counter[0] = first_bid

        late = []

        def assign(el, ctr):
            # An element built with an explicit bid was inserted after the page
            # loaded: BrowserGym marks it later, so it and its unmarked
            # descendants take numbers after the ones already on the page.
            if el.bid is None:
                el.bid = str(ctr[0])
                ctr[0] += 1
            elif ctr is counter:
                late.append(el)
                return
            if el.key:
                self.keys[el.key] = el.bid
            for c in el.children:
                if isinstance(c, El):
                    assign(c, ctr)

        for el in body:
            assign(el, counter)
        for el in late:
            if el.key:
                self.keys[el.key] = el.bid
            local = [int(el.bid) + 1]
            for c in el.children:
                if isinstance(c, El):
                    assign(c, local)
        self.head_extra = head_extra
        self._layout()

    def bid(self, key):
        return self.keys[key]

    def act(self, name, key, *args):
        """A BrowserGym action on the element `key`: `name('bid', 'arg', …)`."""
        return f"{name}(" + ", ".join(f"'{a}'" for a in (self.bid(key), *args)) + ")"

    # --- layout: a simple vertical flow, enough for plausible bboxes -------------
    def _layout(self):
        y = [8.0]

        def lay(el, depth):
            x = 8.0 + 12 * depth
            w = 1264.0 - 24 * depth
            top = y[0]
            kids = [c for c in el.children if isinstance(c, El)]
            if not kids:
                y[0] += el.h
            for c in kids:
                lay(c, depth + 1)
            height = max(y[0] - top, float(el.h) if not kids else 0.0)
            el.bbox = [x, top, w, height]

        for el in self.body:
            lay(el, 0)

    # --- HTML -------------------------------------------------------------------
    @staticmethod
    def _attrs(el, live=True):
        a = {"bid": el.bid}
        a.update(el.attrs)
        if el.vis:
            a["visible"] = ""
        if el.click:
            a["clickable"] = ""
        return " ".join(f'{k}="{htmlmod.escape(str(v), quote=True)}"' for k, v in sorted(a.items()))

    def _html(self, el, depth, out):
        ind = " " * depth
        if isinstance(el, str):
            out.append(f"{ind}{htmlmod.escape(el, quote=False)}\n")
            return
        if el.tag in VOID:
            out.append(f"{ind}<{el.tag} {self._attrs(el)}/>\n")
            return
        out.append(f"{ind}<{el.tag} {self._attrs(el)}>\n")
        for c in el.children:
            self._html(c, depth + 1, out)
        out.append(f"{ind}</{el.tag}>\n")

    def pruned_html(self):
        out = [f'<head bid="1">\n <title bid="2">\n  {htmlmod.escape(self.title, quote=False)}\n </title>\n</head>\n']
        for el in self.body:
            self._html(el, 0, out)
        return "".join(out)

    def dom_txt(self):
        out = ['<html bid="0" lang="en" visible="">\n <head bid="1">\n',
               f'  <title bid="2">\n   {htmlmod.escape(self.title, quote=False)}\n  </title>\n',
               '  <meta bid="3" charset="utf-8"/>\n',
               '  <link bid="4" href="/static/site.css" rel="stylesheet"/>\n',
               '  <script bid="5" defer="" src="/static/app.js">\n  </script>\n',
               f' </head>\n <body bid="{self.body_bid}" visible="">\n']
        for el in self.body:
            self._html(el, 2, out)
        out.append(" </body>\n</html>\n")
        return "".join(out)

    # --- accessibility tree -----------------------------------------------------
    def _ax(self, el, depth, lines, parent_name):
        tabs = "\t" * depth
        if isinstance(el, str):
            if el.strip() and el.strip() != parent_name:
                lines.append(f"{tabs}StaticText {el.strip()!r}")
            return
        if el.role is None:
            for c in el.children:
                self._ax(c, depth, lines, parent_name)
            return
        line = f"{tabs}[{el.bid}] {el.role} {el.name.strip()!r}"
        if el.value is not None:
            line += f" value={el.value!r}"
        extra = []
        if el.click:
            extra.append("clickable")
        if el.vis:
            extra.append("visible")
        attrs = extra + el.props
        if attrs:
            line += ", " + ", ".join(attrs)
        lines.append(line)
        for c in el.children:
            self._ax(c, depth + 1, lines, el.name.strip())

    def axtree_txt(self):
        lines = [f"RootWebArea {self.title!r}, focused"]
        for el in self.body:
            self._ax(el, 1, lines, self.title)
        return "\n".join(lines)

    def extra_properties(self):
        props = {"0": {"visibility": 1.0, "bbox": [0, 0, 1280, 720], "clickable": False, "set_of_marks": False}}
        for b in ("1", "2", "3", "4", "5"):
            props[b] = {"visibility": 0.0, "bbox": None, "clickable": False, "set_of_marks": False}
        props[self.body_bid] = {"visibility": 1.0, "bbox": [0, 0, 1280, 720], "clickable": False, "set_of_marks": False}

        def walk(el):
            props[el.bid] = {
                "visibility": 1.0 if el.vis else 0.0,
                "bbox": el.bbox if el.vis else None,
                "clickable": el.click,
                "set_of_marks": el.click and el.vis,
            }
            for c in el.children:
                if isinstance(c, El):
                    walk(c)

        for el in self.body:
            walk(el)
        return props


# ---- element shorthands --------------------------------------------------------------

def link(text, href, key=None, attrs=None, **kw):
    a = {"href": href}
    a.update(attrs or {})
    return El("a", text, role="link", name=text, props=[f"url={href!r}"], attrs=a, click=kw.pop("click", kw.get("vis", True)),
              key=key, **kw)


def button(text, key=None, disabled=False, attrs=None, props=(), **kw):
    a = {"type": "button"}
    a.update(attrs or {})
    p = list(props)
    if disabled:
        a["disabled"] = ""
        p.append("disabled=True")
    return El("button", text, role="button", name=text, props=p, attrs=a, click=not disabled, key=key, **kw)


def heading(level, text, key=None):
    return El(f"h{level}", text, role="heading", name=text, key=key)


def para(text, key=None, **kw):
    return El("p", text, role="paragraph", key=key, **kw)


def div(*children, **kw):
    return El("div", *children, **kw)


def span(text, **kw):
    return El("span", text, **kw)


def textbox(label, value, key, focused=False, required=False, itype="text", role="textbox", attrs=None, host=None):
    a = {"type": itype, "value": value}
    a.update(attrs or {})
    props = []
    if focused:
        props.append("focused")
    if required:
        props.append("required")
        a["required"] = ""
    return El("input", role=role, name=label, value=value, props=props, attrs=a, click=True, key=key)


def select(label, options, chosen, key, attrs=None, focused=False):
    kids = []
    for i, (val, text) in enumerate(options):
        oa = {"value": val}
        if text == chosen:
            oa["selected"] = ""
        kids.append(El("option", text, role="option", name=text, props=[f"selected={text == chosen}"],
                       attrs=oa, vis=False, key=f"{key}.{i}", h=0))
    props = (["focused"] if focused else []) + ["hasPopup='menu'", "expanded=False"]
    return El("select", *kids, role="combobox", name=label, value=chosen, props=props,
              attrs=dict(attrs or {}), click=True, key=key)


def checkbox(label, checked, key, focused=False, attrs=None):
    a = {"type": "checkbox"}
    a.update(attrs or {})
    if checked:
        a["checked"] = ""
    props = (["focused"] if focused else []) + [f"checked={('true' if checked else 'false')!r}"]
    return El("input", role="checkbox", name=label, props=props, attrs=a, click=True, key=key)


def label(*children):
    return El("label", *children, role="LabelText", name="", click=True)


def ul(*items, name="", attrs=None):
    return El("ul", *[El("li", *(i if isinstance(i, tuple) else (i,)), role="listitem") for i in items],
              role="list", name=name, attrs=attrs)


# ---- trajectory writer -----------------------------------------------------------------

def write_trajectory(path, source_task, goal, states, predictions):
    """`states`: list of dicts with page, focused, action, think, error.
    `predictions`: list of sidecar rows (already formatted)."""
    steps = []
    prev_action = ""
    for i, st in enumerate(states):
        page = st["page"]
        last = i == len(states) - 1
        action = None if last else st["action"]
        think = None if last else st["think"]
        steps.append({
            "step": i,
            "url": page.url,
            "goal": goal,
            "open_pages_urls": [page.url],
            "open_pages_titles": [page.title],
            "focused_element_bid": st.get("focused") or page.body_bid,
            "last_action": prev_action,
            "last_action_error": st.get("error", ""),
            "axtree_txt": page.axtree_txt(),
            "pruned_html": page.pruned_html(),
            "dom_txt": page.dom_txt(),
            "extra_element_properties": page.extra_properties(),
            "action": action,
            "think": think,
            "llm_answer_raw": None if last else f"<think>\n{think}\n</think>\n\n<action>\n{action}\n</action>",
            "reward": 1.0 if last else 0,
            "terminated": last,
            "truncated": False,
        })
        prev_action = action or ""
    doc = {
        "source_task": source_task,
        "format": "BrowserGym/AgentLab step records as JSON (observation at step t, action taken from "
                  "step t; step t+1 holds the next observation). Hand-written Worldloom sample.",
        "steps": steps,
    }
    write_text(path, json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    stem = os.path.splitext(path)[0]
    write_jsonl(stem + ".predictions.jsonl", predictions)


# =====================================================================================
# 1. Tidewell Outfitters: search -> results -> product page -> add to cart -> cart
# =====================================================================================

SHOP = "https://shop.tidewell.example"
PACK = "Ridgeline 28L Daypack"


def shop_header(query="", focused=False, cart=0):
    return El("header",
              link("Tidewell Outfitters", f"{SHOP}/", key="logo", attrs={"class": "logo"}),
              El("nav",
                 ul(link("Men", f"{SHOP}/c/men"), link("Women", f"{SHOP}/c/women"),
                    link("Packs & Bags", f"{SHOP}/c/packs"), link("Sale", f"{SHOP}/c/sale")),
                 role="navigation", name="Main", attrs={"aria-label": "Main"}),
              El("form",
                 textbox("Search gear", query, "q", focused=focused, itype="search", role="searchbox",
                         attrs={"name": "q", "placeholder": "Search gear", "autocomplete": "off"}),
                 button("Search", key="search_btn", attrs={"type": "submit"}),
                 role="search", attrs={"action": "/search", "role": "search"}),
              link("Account", f"{SHOP}/account"),
              link(f"Cart ({cart})", f"{SHOP}/cart", key="cart_link", attrs={"class": "cart-link"}),
              role="banner")


def shop_footer():
    return El("footer",
              para("© 2026 Tidewell Outfitters · Free returns within 60 days", vis=False),
              link("Shipping & returns", f"{SHOP}/help/shipping", vis=False),
              link("Contact us", f"{SHOP}/help/contact", vis=False),
              role="contentinfo", vis=False)


def card(name, href, price, note):
    return El("article",
              El("img", role="image", name=name, attrs={"alt": name, "src": href.replace("/p/", "/media/") + ".jpg"}, h=120),
              link(name, href),
              span(price, attrs={"class": "price"}),
              span(note, attrs={"class": "rating"}),
              role="article", attrs={"class": "product-card"})


def shop_home(query="", focused=False):
    return Page("Tidewell Outfitters — Outdoor gear", f"{SHOP}/", [
        shop_header(query, focused),
        El("main",
           heading(1, "Built for the long way round"),
           para("Packs, shells and camp kit tested on the coast path. Free returns within 60 days."),
           El("section",
              heading(2, "Staff picks"),
              card("Saltmarsh Rain Shell", f"{SHOP}/p/saltmarsh-rain-shell", "$149.00", "4.6 out of 5 (88 reviews)"),
              card("Cairn Trekking Poles", f"{SHOP}/p/cairn-trekking-poles", "$64.00", "4.4 out of 5 (41 reviews)"),
              role="region", name="Staff picks", attrs={"aria-label": "Staff picks"}),
           role="main"),
        shop_footer(),
    ])


def shop_results():
    return Page("Search: daypack — Tidewell Outfitters", f"{SHOP}/search?q=daypack", [
        shop_header("daypack"),
        El("main",
           heading(1, "Results for “daypack”"),
           para("3 items"),
           label("Sort by", select("Sort by", [("relevance", "Relevance"), ("price-asc", "Price: low to high"),
                                               ("rating", "Top rated")], "Relevance", "sort", attrs={"name": "sort"})),
           El("section",
              card(PACK, f"{SHOP}/p/ridgeline-28l-daypack", "$89.00", "4.7 out of 5 (212 reviews)"),
              card("Ridgeline 18L Daypack", f"{SHOP}/p/ridgeline-18l-daypack", "$72.00", "4.5 out of 5 (97 reviews)"),
              card("Drift Packable Daypack", f"{SHOP}/p/drift-packable-daypack", "$38.00", "4.1 out of 5 (63 reviews)"),
              role="region", name="Search results", attrs={"aria-label": "Search results"}),
           role="main"),
        shop_footer(),
    ], first_bid=None)


COLOURS = [("slate", "Slate grey"), ("forest", "Forest green"), ("ochre", "Ochre")]


def shop_product(colour="Slate grey", added=False, cart=0, focus=None):
    main = [
        El("nav", ul(link("Home", f"{SHOP}/"), link("Packs & Bags", f"{SHOP}/c/packs")),
           role="navigation", name="Breadcrumb", attrs={"aria-label": "Breadcrumb"}),
        heading(1, PACK),
        El("img", role="image", name=f"{PACK} in {colour}", key="photo",
           attrs={"alt": f"{PACK} in {colour}", "src": f"/media/ridgeline-28l-{colour.split()[0].lower()}.jpg"}, h=320),
        para("$89.00", attrs={"class": "price"}),
        para("In stock — ships in 1–2 business days", key="stock"),
        label("Colour", select("Colour", COLOURS, colour, "colour", attrs={"id": "colour", "name": "colour"},
                               focused=focus == "colour")),
        label("Quantity", El("input", role="spinbutton", name="Quantity", value="1",
                 props=["valuemin=1", "valuemax=10"], click=True, key="qty",
                 attrs={"id": "qty", "max": "10", "min": "1", "name": "qty", "type": "number", "value": "1"})),
        button("Add to cart", key="add", attrs={"class": "primary", "type": "submit"},
               props=["focused"] if focus == "add" else []),
    ]
    if added:
        main.append(El("div",
                       para(f"Added to your cart: {PACK} — {colour}, qty 1"),
                       link("View cart", f"{SHOP}/cart"),
                       role="status", attrs={"class": "toast", "role": "status"}, bid="412"))
    main += [
        heading(2, "Details"),
        ul("28 litre main compartment with laptop sleeve", "Recycled 420D nylon, PFC-free finish",
           "Weight 890 g"),
    ]
    return Page(f"{PACK} — Tidewell Outfitters", f"{SHOP}/p/ridgeline-28l-daypack",
                [shop_header(cart=cart), El("main", *main, role="main"), shop_footer()])


def shop_cart():
    return Page("Your cart — Tidewell Outfitters", f"{SHOP}/cart", [
        shop_header(cart=1),
        El("main",
           heading(1, "Your cart"),
           El("table",
              El("tr", El("th", "Item", role="columnheader", name="Item"), El("th", "Colour", role="columnheader", name="Colour"),
                 El("th", "Qty", role="columnheader", name="Qty"), El("th", "Price", role="columnheader", name="Price"), role="row",
                 name="Item Colour Qty Price"),
              El("tr",
                 El("td", link(PACK, f"{SHOP}/p/ridgeline-28l-daypack"), role="cell", name=PACK),
                 El("td", "Forest green", role="cell", name="Forest green"),
                 El("td", El("input", role="spinbutton", name="Quantity for Ridgeline 28L Daypack", value="1",
                             props=["valuemin=0", "valuemax=10"], click=True, key="cart_qty",
                             attrs={"aria-label": "Quantity for Ridgeline 28L Daypack", "min": "0", "max": "10",
                                    "type": "number", "value": "1"}), role="cell", name=""),
                 El("td", "$89.00", role="cell", name="$89.00"),
                 role="row", name=f"{PACK} Forest green $89.00"),
              role="table", name="Cart items", attrs={"aria-label": "Cart items"}),
           para("Subtotal: $89.00"),
           para("Shipping calculated at checkout"),
           button("Checkout", attrs={"class": "primary"}),
           link("Continue shopping", f"{SHOP}/"),
           role="main"),
        shop_footer(),
    ])


def build_shop(outdir):
    s0 = shop_home()
    s1 = shop_home("daypack", focused=True)
    s2 = shop_results()
    s3 = shop_product()
    s4 = shop_product("Forest green", focus="colour")
    s5 = shop_product("Forest green", focus="colour")
    s6 = shop_product("Forest green", added=True, cart=1, focus="add")
    s7 = shop_cart()
    q = s0.bid("q")
    states = [
        dict(page=s0, action=f"fill('{q}', 'daypack')",
             think="The goal is a green Ridgeline 28L daypack. I will search for 'daypack' using the search box."),
        dict(page=s1, focused=q, action="keyboard_press('Enter')",
             think="The query is typed into the search box. Pressing Enter submits the search form."),
        dict(page=s2, action=f"click('{find_link(s2, PACK)}')",
             think=f"The results list '{PACK}' first. I will open its product page."),
        dict(page=s3, action=s3.act("select_option", "colour", "Forest green"),
             think="The product page defaults to Slate grey. I need the green one, so I select 'Forest green' in the Colour dropdown."),
        dict(page=s4, focused=s4.bid("colour"), action=s4.act("hover", "photo"),
             think="Forest green is selected. I hover over the photo to check whether a zoomed view shows the colour."),
        dict(page=s5, focused=s5.bid("colour"), action=s5.act("click", "add"),
             think="Hovering did nothing; the photo already shows the green pack. Quantity is 1, so I click 'Add to cart'."),
        dict(page=s6, focused=s6.bid("add"), action=s6.act("click", "cart_link"),
             think="A status message confirms the pack was added and the header shows 'Cart (1)'. I open the cart."),
        dict(page=s7),
    ]
    ax = [st["page"].axtree_txt() for st in states]
    hx = [st["page"].pruned_html() for st in states]
    preds = []
    # 1: local edit, predicted exactly right.
    preds.append(prediction_row(1, ax[1], "fill() types into the search box and focuses it; nothing else on the home page changes.", "axtree"))
    # 2: page change; the model forgets the third result.
    p2 = drop_line(ax[2], "link 'Drift Packable Daypack'")
    p2 = replace_once(p2, "StaticText '3 items'", "StaticText '2 items'")
    preds.append(prediction_row(2, p2, "Enter submits the search: a results page for 'daypack' with the matching packs and a sort control.", "axtree"))
    # 3: page change; stale colour in the image name.
    p3 = replace_once(ax[3], f"image '{PACK} in Slate grey'", f"image '{PACK}'")
    preds.append(prediction_row(3, p3, "Clicking the product link opens its page: title, price, colour and quantity controls, Add to cart.", "axtree"))
    # 4: local edit; the model changes the select value but keeps the old option selected.
    p4 = replace_once(ax[4], "option 'Slate grey', selected=False", "option 'Slate grey', selected=True")
    p4 = replace_once(p4, "option 'Forest green', selected=True", "option 'Forest green', selected=False")
    preds.append(prediction_row(4, p4, "select_option sets the Colour combobox to Forest green; the product photo follows the colour.", "axtree"))
    # 5: no-op predicted as a change (an invented delivery panel).
    p5 = replace_once(ax[5], f"[{s5.bid('photo')}] image '{PACK} in Forest green', visible",
                      f"[{s5.bid('photo')}] image '{PACK} in Forest green', visible\n\t\t[415] dialog 'Zoomed photo', visible, modal=False")
    preds.append(prediction_row(5, p5, "Hovering over the product photo may open a zoom preview.", "axtree"))
    # 6: the cart counter is left stale.
    p6 = replace_once(ax[6], "link 'Cart (1)'", "link 'Cart (0)'")
    preds.append(prediction_row(6, p6, "Add to cart shows a confirmation message under the button.", "axtree"))
    # 7: cart page; wrong subtotal.
    p7 = replace_once(ax[7], "StaticText 'Subtotal: $89.00'", "StaticText 'Subtotal: $98.00'")
    preds.append(prediction_row(7, p7, "The cart link opens the cart with one Ridgeline 28L Daypack in Forest green.", "axtree"))
    # HTML predictions (second engine line) for the same steps.
    hp = []
    h1 = replace_once(hx[1], 'value="daypack"', 'value=""')
    hp.append(prediction_row(1, h1, "Typing does not change the HTML value attribute; the page stays as it was.", "html",
                             engine="sample-author-html"))
    h2 = replace_once(hx[2], "3 items", "3 results")
    hp.append(prediction_row(2, h2, "Submitting the form loads /search?q=daypack.", "html", engine="sample-author-html"))
    h3 = replace_once(hx[3], "In stock — ships in 1–2 business days", "In stock")
    hp.append(prediction_row(3, h3, "The product page opens.", "html", engine="sample-author-html"))
    h4 = replace_once(hx[4], 'selected="" value="forest"', 'value="forest"')
    h4 = replace_once(h4, 'bid="' + s4.bid("colour.0") + '" value="slate"', 'bid="' + s4.bid("colour.0") + '" selected="" value="slate"')
    hp.append(prediction_row(4, h4, "The select's value changes to forest.", "html", engine="sample-author-html"))
    hp.append(prediction_row(5, hx[5], "Hovering the photo has no effect on the markup.", "html", engine="sample-author-html"))
    h6 = hx[6].replace('<div bid="412" class="toast" role="status" visible="">', '<div bid="412" class="toast" role="alert" visible="">')
    if h6 == hx[6]:
        raise ValueError("html anchor missing")
    hp.append(prediction_row(6, h6, "A toast confirms the item was added.", "html", engine="sample-author-html"))
    h7 = replace_once(hx[7], "Shipping calculated at checkout", "Free shipping")
    hp.append(prediction_row(7, h7, "The cart page lists the pack.", "html", engine="sample-author-html"))
    write_trajectory(os.path.join(outdir, "agentlab_tidewell-shop_add-to-cart_8steps.json"),
                     "sample.tidewell-shop.add-to-cart (hand-written)",
                     f"Find the {PACK} in Forest green, add one to the cart and open the cart.",
                     states, preds + hp)


def find_link(page, name):
    for el in iter_els(page.body):
        if el.tag == "a" and el.name == name:
            return el.bid
    raise KeyError(name)


def iter_els(els):
    stack = list(reversed(els))
    while stack:
        el = stack.pop()
        if isinstance(el, El):
            yield el
            stack.extend(reversed([c for c in el.children if isinstance(c, El)]))


# =====================================================================================
# 2. Quillpost: profile settings form (fill, select, checkbox, save, disabled button)
# =====================================================================================

QP = "https://app.quillpost.example"
ZONES = [("America/New_York", "(UTC−05:00) New York"), ("Europe/London", "(UTC+00:00) London"),
         ("Europe/Lisbon", "(UTC+00:00) Lisbon"), ("Europe/Berlin", "(UTC+01:00) Berlin"),
         ("Asia/Singapore", "(UTC+08:00) Singapore")]


def qp_settings(name="Rowan V.", zone="(UTC−05:00) New York", digest=False, mentions=True,
                saved=False, dirty=False, focus=None, shown_name="Rowan V."):
    side = El("nav",
              ul(link("Profile", f"{QP}/settings/profile", attrs={"aria-current": "page"}),
                 link("Notifications", f"{QP}/settings/notifications"),
                 link("Privacy", f"{QP}/settings/privacy"),
                 link("Connected apps", f"{QP}/settings/apps")),
              role="navigation", name="Settings", attrs={"aria-label": "Settings"})
    form = [
        heading(1, "Profile"),
    ]
    if saved:
        form.append(El("div", para("Profile saved."), role="status", attrs={"role": "status", "class": "notice"}))
    form += [
        El("label", "Display name", role="LabelText", attrs={"for": "display-name"}),
        textbox("Display name", name, "name", focused=focus == "name", required=True,
                attrs={"id": "display-name", "maxlength": "50", "name": "display_name"}),
        para("Shown on your posts and comments.", attrs={"class": "hint"}),
        El("label", "Email", role="LabelText", attrs={"for": "email"}),
        El("input", role="textbox", name="Email", value="rowan@example.com", props=["disabled=True"],
           attrs={"disabled": "", "id": "email", "type": "email", "value": "rowan@example.com"}),
        label("Time zone", select("Time zone", ZONES, zone, "zone", attrs={"id": "tz", "name": "time_zone"},
                                  focused=focus == "zone")),
        El("fieldset",
           El("legend", "Email", role="LabelText", name="Email"),
           label(checkbox("Weekly digest of top posts", digest, "digest", focused=focus == "digest",
                          attrs={"id": "digest", "name": "digest"}), "Weekly digest of top posts"),
           label(checkbox("Replies and mentions", mentions, "mentions", attrs={"id": "mentions", "name": "mentions"}),
                 "Replies and mentions"),
           role="group", name="Email"),
        button("Save changes", key="save", disabled=not dirty, attrs={"class": "primary", "type": "submit"},
               props=["focused"] if focus == "save" else []),
        link("Cancel", f"{QP}/home"),
    ]
    # Saving posts the form and redirects to ?saved=1: a fresh page, so bids are renumbered in DOM order.
    return Page("Profile settings · Quillpost", f"{QP}/settings/profile" + ("?saved=1" if saved else ""), [
        El("header", link("Quillpost", f"{QP}/home"), button(f"Account menu for {shown_name}",
           attrs={"aria-haspopup": "menu", "aria-expanded": "false"}, props=["hasPopup='menu'", "expanded=False"]),
           role="banner"),
        El("div", side, El("main", El("form", *form, attrs={"method": "post", "action": "/settings/profile"}), role="main"),
           attrs={"class": "layout"}),
    ])


def build_settings(outdir):
    s0 = qp_settings()
    s1 = qp_settings(name="Rowan Vale", dirty=True, focus="name")
    s2 = qp_settings(name="Rowan Vale", zone="(UTC+00:00) Lisbon", dirty=True, focus="zone")
    s3 = qp_settings(name="Rowan Vale", zone="(UTC+00:00) Lisbon", digest=True, dirty=True, focus="digest")
    s4 = qp_settings(name="Rowan Vale", zone="(UTC+00:00) Lisbon", digest=True, saved=True, shown_name="Rowan Vale")
    s5 = qp_settings(name="Rowan Vale", zone="(UTC+00:00) Lisbon", digest=True, saved=True, shown_name="Rowan Vale")
    states = [
        dict(page=s0, action=s0.act("fill", "name", "Rowan Vale"),
             think="I need to change the display name first. I fill the Display name field with 'Rowan Vale'."),
        dict(page=s1, focused=s1.bid("name"), action=s1.act("select_option", "zone", "(UTC+00:00) Lisbon"),
             think="The name is set and 'Save changes' is now enabled. Next, the time zone: I select Lisbon."),
        dict(page=s2, focused=s2.bid("zone"), action=s2.act("click", "digest"),
             think="Time zone is Lisbon. Now I tick 'Weekly digest of top posts'."),
        dict(page=s3, focused=s3.bid("digest"), action=s3.act("click", "save"),
             think="All three fields are set. I click 'Save changes'."),
        dict(page=s4, action=s4.act("click", "save"),
             think="The page says 'Profile saved.' I click Save once more to be sure it stuck."),
        dict(page=s5, error=f"TimeoutError: locator.click: Timeout 500ms exceeded.\n=========================== logs ===========================\nwaiting for get_by_test_id(\"{s4.bid('save')}\")\n  - element is not enabled - waiting...\n============================================================"),
    ]
    ax = [st["page"].axtree_txt() for st in states]
    preds = []
    p1 = replace_once(ax[1], "button 'Save changes', clickable, visible", "button 'Save changes', visible, disabled=True")
    preds.append(prediction_row(1, p1, "fill() replaces the display name; the Save button should stay as it was.", "axtree"))
    p2 = replace_once(ax[2], "value='(UTC+00:00) Lisbon'", "value='(UTC+00:00) London'")
    p2 = replace_once(p2, "option '(UTC+00:00) London', selected=False", "option '(UTC+00:00) London', selected=True")
    p2 = replace_once(p2, "option '(UTC+00:00) Lisbon', selected=True", "option '(UTC+00:00) Lisbon', selected=False")
    preds.append(prediction_row(2, p2, "The time-zone combobox takes the chosen UTC+00:00 option.", "axtree"))
    p3 = replace_once(ax[3], "checkbox 'Weekly digest of top posts', clickable, visible, focused, checked='true'",
                      "checkbox 'Weekly digest of top posts', clickable, visible, focused, checked='false'")
    preds.append(prediction_row(3, p3, "Clicking the digest checkbox focuses it.", "axtree"))
    p4 = replace_once(ax[4], "button 'Account menu for Rowan Vale'", "button 'Account menu for Rowan V.'")
    preds.append(prediction_row(4, p4, "Saving reloads the form with a confirmation notice; the button is disabled again as nothing is dirty.", "axtree"))
    preds.append(prediction_row(5, ax[5], "The Save button is disabled after saving, so the click has no effect; the page stays the same.", "axtree"))
    write_trajectory(os.path.join(outdir, "agentlab_quillpost-profile-settings_6steps.json"),
                     "sample.quillpost.profile-settings (hand-written)",
                     "Change your display name to 'Rowan Vale', set your time zone to Lisbon, turn on the weekly "
                     "digest email and save.", states, preds)


# =====================================================================================
# 3. Larkmail webmail: inbox -> open message -> reply -> type -> (scroll no-op) -> send
# =====================================================================================

LM = "https://mail.larkmail.example"
MSGS = [
    ("Odile Marchetti", "Venue booking for the spring meetup", "Hi both, the Harbour Room is free on Thursday or Friday evening…", "10:42", True),
    ("Tern Cycles", "Your service appointment is confirmed", "See you on Saturday at 9:30. Bring your bike's…", "09:15", False),
    ("Felix Adeyemi", "Slides from Tuesday", "Attached are the slides and the notes we promised…", "Yesterday", False),
    ("Larkmail", "Your storage is 80% full", "Free up space or upgrade to keep receiving mail…", "Mon", False),
]
BODY = ("Hi both,\nthe Harbour Room is free on Thursday 14 May or Friday 15 May, 18:00–21:00. "
        "It seats 40 and has a projector. Let me know which evening suits you and I will confirm the booking.\n"
        "Odile")


def lm_shell(main, title, url, unread=1):
    return Page(title, url, [
        El("header", link("Larkmail", f"{LM}/#inbox"),
           El("form", textbox("Search mail", "", "mailsearch", itype="search", role="searchbox",
                              attrs={"placeholder": "Search mail"}), role="search", attrs={"role": "search"}),
           button("Settings", attrs={"aria-label": "Settings"}), role="banner"),
        El("nav", button("Compose", attrs={"class": "compose"}),
           ul(link(f"Inbox {unread}" if unread else "Inbox", f"{LM}/#inbox"), link("Starred", f"{LM}/#starred"),
              link("Sent", f"{LM}/#sent"), link("Drafts", f"{LM}/#drafts"), link("Archive", f"{LM}/#archive")),
           role="navigation", name="Folders", attrs={"aria-label": "Folders"}),
        El("main", *main, role="main"),
    ])


def lm_inbox():
    rows = []
    for i, (who, subj, snip, when, unread) in enumerate(MSGS):
        rows.append(El("tr",
                       El("td", checkbox(f"Select message from {who}", False, f"sel{i}",
                                         attrs={"aria-label": f"Select message from {who}"}), role="cell", name=""),
                       El("td", link(f"{who} {subj}", f"{LM}/#inbox/m{4821 - i}", key=f"msg{i}"),
                          role="cell", name=f"{who} {subj}"),
                       El("td", snip, role="cell", name=snip),
                       El("td", when, role="cell", name=when),
                       role="row", name=("unread, " if unread else "") + f"{who}, {subj}, {when}",
                       attrs={"class": "unread" if unread else "read"}))
    return lm_shell([heading(1, "Inbox"), El("table", *rows, role="grid", name="Messages", attrs={"aria-label": "Messages"})],
                    "Inbox (1) - Larkmail", f"{LM}/#inbox")


def lm_message(reply=None, sent=False, focus=False):
    who, subj = MSGS[0][0], MSGS[0][1]
    main = [
        toolbar := El("div", button("Back to Inbox"), button("Archive"), button("Delete"),
                      button("Mark as unread"), role="toolbar", name="Message actions",
                      attrs={"role": "toolbar", "aria-label": "Message actions"}),
        heading(1, subj),
        El("article",
           para(f"{who} <odile@meetups.example>"),
           para("to me, Felix Adeyemi · 10:42"),
           *[para(line) for line in BODY.split("\n")],
           role="article", name=f"Message from {who}", attrs={"aria-label": f"Message from {who}"}),
    ]
    del toolbar
    if sent:
        main.append(El("article",
                       para("Me <me@larkmail.example>"),
                       para("to Odile Marchetti, Felix Adeyemi · 10:58"),
                       para("Thursday works for us. Please go ahead and book the Harbour Room. Thanks!"),
                       role="article", name="Message from me", attrs={"aria-label": "Message from me"}, bid="301"))
        main.append(El("div", para("Message sent."), link("Undo", f"{LM}/#undo"), role="status",
                       attrs={"role": "status"}, bid="306"))
    if reply is None:
        main.append(El("div", button("Reply", key="reply"), button("Reply all"), button("Forward")))
    else:
        main.append(El("form",
                       para("Reply to Odile Marchetti, Felix Adeyemi", bid="240"),
                       El("textarea", reply, role="textbox", name="Message body", value=reply,
                          props=["focused"] if focus else [],
                          attrs={"aria-label": "Message body", "rows": "8"}, click=True, key="body", bid="241", h=160),
                       button("Send", key="send", bid="242", attrs={"class": "primary"}),
                       button("Discard draft", bid="243"),
                       role="form", name="Reply", attrs={"aria-label": "Reply"}, bid="239"))
    return lm_shell(main, f"{subj} - Larkmail", f"{LM}/#inbox/m4821", unread=0)


def build_mail(outdir):
    s0 = lm_inbox()
    s1 = lm_message()
    s2 = lm_message(reply="", focus=True)
    text = "Thursday works for us. Please go ahead and book the Harbour Room. Thanks!"
    s3 = lm_message(reply=text, focus=True)
    s4 = lm_message(reply=text, focus=True)
    s5 = lm_message(sent=True)
    states = [
        dict(page=s0, action=s0.act("click", "msg0"),
             think="Odile's message about the venue booking is the first, unread row. I open it."),
        dict(page=s1, action=s1.act("click", "reply"),
             think="The message offers Thursday or Friday. I click Reply to answer."),
        dict(page=s2, focused="241", action=f"fill('241', '{text}')",
             think="A reply form opened with the body focused. I type the answer."),
        dict(page=s3, focused="241", action="scroll(0, 300)",
             think="Before sending I scroll down to check nothing is below the Send button."),
        dict(page=s4, focused="241", action="click('242')",
             think="The page did not move; it already fits the window. I click Send."),
        dict(page=s5),
    ]
    ax = [st["page"].axtree_txt() for st in states]
    preds = []
    p1 = replace_once(ax[1], "link 'Inbox', clickable", "link 'Inbox 1', clickable")
    preds.append(prediction_row(1, p1, "Clicking the row opens the message view with the full body and reply buttons.", "axtree"))
    p2 = drop_line(ax[2], "button 'Discard draft'")
    preds.append(prediction_row(2, p2, "Reply opens an inline composer under the message and focuses the body.", "axtree"))
    preds.append(prediction_row(3, ax[3], "fill() puts the text into the reply body; the rest of the page is unchanged.", "axtree"))
    p4 = ax[4].replace("\tStaticText 'Reply to Odile Marchetti, Felix Adeyemi'", "\tStaticText 'Reply to Odile Marchetti'")
    if p4 == ax[4]:
        raise ValueError("anchor missing")
    preds.append(prediction_row(4, p4, "The page fits the viewport, so the scroll has no visible effect.", "axtree"))
    p5 = replace_once(ax[5], "StaticText 'Message sent.'", "StaticText 'Your message has been sent.'")
    p5 = drop_line(p5, "link 'Undo'")
    preds.append(prediction_row(5, p5, "Send posts the reply; it appears in the thread and a confirmation is shown.", "axtree"))
    write_trajectory(os.path.join(outdir, "agentlab_larkmail-reply_6steps.json"),
                     "sample.larkmail.reply (hand-written)",
                     "Reply to Odile's message about the venue booking saying that Thursday works, and send it.",
                     states, preds)


def build_all(root):
    out = os.path.join(root, "web")
    build_shop(out)
    build_settings(out)
    build_mail(out)
