"""OS samples: OSWorld-style trajectory folders (AT-SPI XML + linearized table).

Each state is modelled as a tree of `N` nodes and written twice: `step_NN.xml`
(one line, no XML declaration, the eight namespaces declared on
`<desktop-frame>`, states as `st:name="true"`, geometry as `cp:screencoord`,
`cp:windowcoord` and `cp:size` only on nodes that are both visible and
showing) and `step_NN.tsv` (the linearized table, rows chosen by OSWorld's
filter: role list, showing + visible, enabled/editable/expandable/checkable,
non-empty name or text, non-negative position and positive size).
"""

import copy
import json
import os

from common import Node, esc, drop_line, prediction_row, replace_once, write_jsonl, write_text

NS = ('xmlns:st="https://accessibility.ubuntu.example.org/ns/state" '
      'xmlns:attr="https://accessibility.ubuntu.example.org/ns/attributes" '
      'xmlns:cp="https://accessibility.ubuntu.example.org/ns/component" '
      'xmlns:doc="https://accessibility.ubuntu.example.org/ns/document" '
      'xmlns:docattr="https://accessibility.ubuntu.example.org/ns/document/attributes" '
      'xmlns:txt="https://accessibility.ubuntu.example.org/ns/text" '
      'xmlns:val="https://accessibility.ubuntu.example.org/ns/value" '
      'xmlns:act="https://accessibility.ubuntu.example.org/ns/action"')

TAIL_STATES = ["manages_descendants"]  # listed after the alphabetical ones, as pyatspi does


class N(Node):
    """One accessible object. `win` is the screen position of the window's
    client origin, for top-level windows."""

    FIELDS = dict(st=(), geom=None, text=None, desc=None, attrs=None, image=False, selection=False, val=None,
                  acts=None, toolkit="gtk", win=None, key=None)

    def __init__(self, tag, name="", *children, **fields):
        super().__init__(children, fields)
        self.tag = tag
        self.name = name
        self.st = set(self.st)
        self.attrs = dict(self.attrs or {})
        self.acts = self.acts or []


def esc_text(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_xml(root_apps):
    out = [f"<desktop-frame {NS}>"]

    def ser(n, origin):
        if n.win is not None:
            origin = n.win
        parts = [f'<{n.tag} name="{esc(n.name)}"']
        states = sorted(s for s in n.st if s not in TAIL_STATES) + [s for s in TAIL_STATES if s in n.st]
        parts += [f' st:{s}="true"' for s in states]
        if n.toolkit:
            parts.append(f' attr:toolkit="{n.toolkit}"')
        for k, v in n.attrs.items():
            parts.append(f' attr:{k}="{esc(v)}"')
        if n.desc:
            parts.append(f' attr:description="{esc(n.desc)}"')
        if n.geom is not None and "showing" in n.st and "visible" in n.st:
            x, y, w, h = n.geom
            if n.win is not None:
                wx, wy = -1, -20
            elif x == -1 and y == -1:
                wx, wy = -1, -1
            else:
                wx, wy = x - origin[0], y - origin[1]
            parts.append(f' cp:screencoord="({x}, {y})" cp:windowcoord="({wx}, {wy})" cp:size="({w}, {h})"')
        if n.image:
            parts.append(' image="true"')
        if n.selection:
            parts.append(' selection="true"')
        if n.val:
            parts += [f' val:{k}="{v}"' for k, v in n.val]
        for aname, kb in n.acts:
            xname = "click" if aname == "menuclick" else aname
            parts.append(f' act:{xname}_desc="{esc(ACT_DESC[aname])}" act:{xname}_kb="{esc(kb)}"')
        if not n.children and not n.text:
            out.append("".join(parts) + "/>")
            return
        out.append("".join(parts) + ">")
        if n.text:
            out.append(esc_text(n.text))
        for c in n.children:
            ser(c, origin)
        out.append(f"</{n.tag}>")

    for app in root_apps:
        ser(app, (0, 0))
    out.append("</desktop-frame>")
    return "".join(out)


ACT_DESC = {"click": "Clicks the button", "activate": "Activates the entry", "press": "Presses the combobox",
            "toggle": "Toggles the button", "menuclick": "Clicks the menuitem"}

ROW_SUFFIXES = ("item", "button", "heading", "label", "scrollbar", "searchbox", "textbox", "link", "tabelement",
                "textfield", "textarea", "menu")
ROW_TAGS = {"alert", "canvas", "check-box", "combo-box", "entry", "icon", "image", "paragraph", "scroll-bar",
            "section", "slider", "static", "table-cell", "terminal", "text"}


def cell(s):
    s = s.replace("\\", "\\\\").replace("\t", "\\t").replace("\r", "\\r").replace("\n", "\\n")
    return s


def to_tsv(root_apps):
    rows = ["tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)"]

    def walk(n):
        keep = (n.tag.startswith("document") or n.tag.endswith(ROW_SUFFIXES) or n.tag in ROW_TAGS)
        keep = keep and "showing" in n.st and "visible" in n.st
        keep = keep and bool(n.st & {"enabled", "editable", "expandable", "checkable"})
        keep = keep and bool(n.name or n.text)
        keep = keep and n.geom is not None and n.geom[0] >= 0 and n.geom[1] >= 0 and n.geom[2] > 0 and n.geom[3] > 0
        if keep:
            text = n.text or ""
            if text == "":
                tcell = '""'
            elif '"' in text:
                tcell = '"' + cell(text).replace('"', '""') + '"'
            else:
                tcell = cell(text)
            x, y, w, h = n.geom
            rows.append(f"{n.tag}\t{cell(n.name)}\t{tcell}\t\t{cell(n.desc or '')}\t({x}, {y})\t({w}, {h})")
        for c in n.children:
            walk(c)

    for app in root_apps:
        walk(app)
    return "\n".join(rows) + "\n"


# ---- state-set shorthands ---------------------------------------------------------------------------------
LIVE = {"enabled", "sensitive", "showing", "visible"}
HIDDEN = {"enabled", "sensitive", "visible"}  # present but not on screen (closed menus, other notebook pages)
OFF = {"visible"}  # insensitive and not showing


def live(*extra):
    return LIVE | set(extra)


def menu(name, x, y, w, items, is_open=False, desc=None, kb=""):
    """A menu-bar menu with its items; items are (tag, name, desc, sensitive) tuples, laid out below it."""
    kids = []
    iy = y + 25
    for tag, iname, idesc, sensitive in items:
        if tag == "separator":
            kids.append(N("separator", "", st=(HIDDEN | {"selectable"}) | ({"showing"} if is_open else set()),
                          geom=(x, iy, 260, 9) if is_open else None, selection=True))
            iy += 9
            continue
        st = ({"selectable", "visible"} | ({"enabled", "sensitive"} if sensitive else set())
              | ({"showing"} if is_open else set()))
        kids.append(N(tag, iname, st=st, geom=(x, iy, 260, 25) if is_open else None, desc=idesc, selection=True,
                      acts=[("menuclick", "")] if sensitive else []))
        iy += 25
    st = live("selectable") | ({"selected", "expanded"} if is_open else set())
    return N("menu", name, *kids, st=st, geom=(x, y, w, 25), desc=desc, selection=True, acts=[("menuclick", kb)])


def write_os_trajectory(folder, goal, states, actions, preds, pred_kind):
    """states: list of lists of application nodes; actions: (code or None, note)."""
    meta = []
    for i, apps in enumerate(states):
        xml = to_xml(apps)
        tsv = to_tsv(apps)
        write_text(os.path.join(folder, f"step_{i:02d}.xml"), xml)
        write_text(os.path.join(folder, f"step_{i:02d}.tsv"), tsv)
        count = [0]
        depth = [0]

        def walk(n, d):
            count[0] += 1
            depth[0] = max(depth[0], d)
            for c in n.children:
                walk(c, d + 1)

        for a in apps:
            walk(a, 1)
        meta.append({"apps": [a.name for a in apps], "nodes": count[0], "max_depth_seen": depth[0],
                     "truncated": False, "table_rows": tsv.count("\n") - 1, "xml_bytes": len(xml.encode()),
                     "step": i})
    write_jsonl(os.path.join(folder, "actions.jsonl"),
                [{"step": i, "action": a, "note": note} for i, (a, note) in enumerate(actions)])
    write_text(os.path.join(folder, "task.json"),
               json.dumps({"goal": goal, "screen": {"width": 1920, "height": 1080}}, ensure_ascii=False, indent=1) + "\n")
    write_text(os.path.join(folder, "capture_meta.json"), json.dumps(meta, indent=1) + "\n")
    rows = []
    for step, think, mutate in preds:
        real = to_xml(states[step]) if pred_kind == "xml" else to_tsv(states[step]).rstrip("\n")
        obs = mutate(real) if mutate else real
        if mutate and obs == real:
            raise ValueError(f"{folder}: prediction for step {step} equals the real state")
        rows.append(prediction_row(step, obs, think, "os-xml" if pred_kind == "xml" else "os-table"))
    write_jsonl(os.path.join(folder, "predictions.jsonl"), rows)


def center(n):
    x, y, w, h = n.geom
    return x + w // 2, y + h // 2


# =====================================================================================
# 1. Thunar: open Documents, select a file, F2 rename dialog, type, Enter, no-op click
# =====================================================================================

FX, FY, FW, FH = 320, 140, 1280, 800  # frame incl. decoration
CX, CY = FX + 1, FY + 20  # client origin

HOME_ITEMS = [("Desktop", "folder"), ("Documents", "folder"), ("Downloads", "folder"), ("Music", "folder"),
              ("Pictures", "folder"), ("Videos", "folder"), ("todo.txt", "file")]
DOC_ITEMS = [("invoices", "folder"), ("draft_budget.ods", "file"), ("meeting-notes.txt", "file"),
             ("reading-list.md", "file"), ("trip_plan.odt", "file")]


def thunar(folder="user", path="/home/user", items=HOME_ITEMS, selected=None, status="", dialog=None,
           back=False, place="Home"):
    active = dialog is None
    menus = N("menu-bar", "",
              menu("File", CX, CY, 39, [("menu-item", "New Window", "Open a new Thunar window", True),
                                        ("menu-item", "Create Folder...", "Create an empty folder", True),
                                        ("separator", "", "", True),
                                        ("menu-item", "Close Window", "Close this window", True)], kb="<Alt>f"),
              menu("Edit", CX + 39, CY, 41, [("menu-item", "Cut", "Prepare the selected files to be moved", selected is not None),
                                             ("menu-item", "Copy", "Prepare the selected files to be copied", selected is not None),
                                             ("menu-item", "Rename...", "Rename the selected file", selected is not None),
                                             ("menu-item", "Select all Files", "Select all files in this window", True)], kb="<Alt>e"),
              menu("View", CX + 80, CY, 48, [("check-menu-item", "Side Pane", "", True),
                                             ("radio-menu-item", "Icon View", "", True),
                                             ("radio-menu-item", "List View", "", True)], kb="<Alt>v"),
              menu("Go", CX + 128, CY, 35, [("menu-item", "Open Parent", "Open the parent folder", True),
                                            ("menu-item", "Home", "Go to the home folder", True)], kb="<Alt>g"),
              menu("Help", CX + 163, CY, 46, [("menu-item", "Contents", "Display Thunar user manual", True),
                                              ("menu-item", "About", "Display information about Thunar", True)], kb="<Alt>h"),
              st=LIVE, geom=(CX, CY, FW - 2, 25), selection=True)
    tb_y = CY + 25

    def tbtn(name, x, sensitive, desc):
        st = ({"focusable", "has_tooltip", "showing", "visible"} | ({"enabled", "sensitive"} if sensitive else set()))
        return N("push-button", name, st=st, geom=(x, tb_y + 4, 34, 34), desc=desc, image=True,
                 acts=[("click", "")])

    toolbar = N("tool-bar", "",
                tbtn("Back", CX + 6, back, "Go to the previous visited folder"),
                tbtn("Forward", CX + 42, False, "Go to the next visited folder"),
                tbtn("Parent folder", CX + 78, path != "/", "Open the parent folder"),
                tbtn("Home", CX + 114, True, "Go to the home folder"),
                N("text", "", st=live("editable", "focusable", "single_line", "selectable_text"),
                  geom=(CX + 156, tb_y + 5, 1000, 32), text=path, acts=[("activate", "")], key="location"),
                tbtn("Search", CX + 1164, True, "Search for a specific file"),
                st=live("horizontal"), geom=(CX, tb_y, FW - 2, 42))
    side_y = tb_y + 42
    places = []
    for i, (pname, pdesc) in enumerate([("Computer", None), ("user", "/home/user"), ("Desktop", "/home/user/Desktop"),
                                        ("Trash", "Trash"), ("File System", "/"), ("Browse Network", "Browse the network")]):
        header = pdesc is None
        st = live("selectable", "transient") | ({"selected", "focused"} if (pname == "user" and place == "Home") else set())
        if header:
            st = live("transient", "expandable", "expanded")
        places.append(N("table-cell", pname, st=st, geom=(CX, side_y + 4 + 28 * i, 190, 28), desc=pdesc))
    side = N("scroll-pane", "Side Pane",
             N("tree-table", "", *places, st=live("focusable", "manages_descendants"), geom=(CX, side_y, 196, 660),
               selection=True),
             st=live("focusable"), geom=(CX, side_y, 196, 660))
    icons = []
    for i, (iname, kind) in enumerate(items):
        col, row = i % 6, i // 6
        st = live("focusable", "selectable", "transient") | ({"selected", "focused"} if iname == selected else set())
        icons.append(N("icon", iname, st=st, geom=(CX + 212 + 172 * col, side_y + 12 + 150 * row, 160, 136),
                       image=True, key=f"icon:{iname}"))
    view = N("scroll-pane", "",
             N("layered-pane", "", *icons, st=live("focusable", "manages_descendants", "multiselectable")
               | ({"focused"} if selected is None and folder != "user" else set()),
               geom=(CX + 200, side_y, 1074, 660), selection=True, key="view"),
             N("scroll-bar", "", st={"enabled", "horizontal", "sensitive", "visible"},
               val=[("value", "0.0"), ("min", "0.0"), ("max", "0.0"), ("step", "107.4")]),
             N("scroll-bar", "", st={"enabled", "sensitive", "vertical", "visible"},
               val=[("value", "0.0"), ("min", "0.0"), ("max", "0.0"), ("step", "66.0")]),
             st=live("focusable"), geom=(CX + 200, side_y, 1074, 660))
    statusbar = N("status-bar", "",
                  N("label", status, st=live("multi_line"), geom=(CX + 8, FY + FH - 34, 800, 26), text=status,
                    key="status"),
                  st=live(), geom=(CX, FY + FH - 36, FW - 2, 30))
    frame = N("frame", f"{folder} - Thunar",
              N("filler", "", menus, toolbar,
                N("split-pane", "", side, view, st=live("focusable", "horizontal"), geom=(CX, side_y, FW - 2, 660),
                  val=[("value", "196.0"), ("min", "0.0"), ("max", "1274.0"), ("step", "0.0")]),
                statusbar, st=live("vertical"), geom=(CX, CY, FW - 2, FH - 21)),
              st=live("resizable") | ({"active"} if active else set()), attrs={"window-type": "normal"},
              geom=(FX, FY, FW, FH), win=(CX, CY))
    apps = [N("application", "Thunar", frame, toolkit=None)]
    if dialog is not None:
        frame.children  # keep the main frame; the dialog is another top-level window of the same application
        apps[0].children.append(dialog)
    return apps


def rename_dialog(old, typed=None):
    dx, dy, dw, dh = 745, 445, 430, 190
    ox, oy = dx + 1, dy + 20
    text = old if typed is None else typed + os.path.splitext(old)[1]
    return N("dialog", f"Rename \"{old}\"",
             N("filler", "",
               N("filler", "",
                 N("icon", "", st=live(), geom=(ox + 12, oy + 16, 48, 48), image=True),
                 N("text", "", st=live("editable", "focusable", "focused", "single_line", "selectable_text"),
                   geom=(ox + 72, oy + 24, 340, 34), text=text, acts=[("activate", "")], key="entry"),
                 st=live("horizontal"), geom=(ox + 12, oy + 16, 400, 48)),
               N("filler", "",
                 N("push-button", "Cancel", st=live("focusable"), geom=(ox + 218, oy + 124, 94, 34),
                   acts=[("click", "")]),
                 N("push-button", "Rename", st=live("focusable", "default"), geom=(ox + 318, oy + 124, 94, 34),
                   acts=[("click", "")]),
                 st=live("horizontal"), geom=(ox + 12, oy + 118, 400, 46)),
               st=live("vertical"), geom=(ox, oy, dw - 2, dh - 21)),
             st=live("active", "modal", "resizable"), attrs={"window-type": "dialog"}, geom=(dx, dy, dw, dh),
             win=(ox, oy))


def build_thunar(root):
    folder = os.path.join(root, "os", "thunar_rename_trajectory")
    renamed = sorted([("budget_2027_q1.ods", "file") if n == "draft_budget.ods" else (n, k) for n, k in DOC_ITEMS],
                     key=lambda t: (t[1] != "folder", t[0]))
    doc_status = "5 items (61.3 kB), Free space: 38.2 GiB"
    s = [
        thunar(status="7 items (1.2 kB), Free space: 38.2 GiB"),
        thunar("Documents", "/home/user/Documents", DOC_ITEMS, status=doc_status, back=True, place=None),
        thunar("Documents", "/home/user/Documents", DOC_ITEMS, selected="draft_budget.ods",
               status="\"draft_budget.ods\" (18.4 kB) OpenDocument Spreadsheet", back=True, place=None),
        thunar("Documents", "/home/user/Documents", DOC_ITEMS, selected="draft_budget.ods",
               status="\"draft_budget.ods\" (18.4 kB) OpenDocument Spreadsheet", back=True, place=None,
               dialog=rename_dialog("draft_budget.ods")),
        thunar("Documents", "/home/user/Documents", DOC_ITEMS, selected="draft_budget.ods",
               status="\"draft_budget.ods\" (18.4 kB) OpenDocument Spreadsheet", back=True, place=None,
               dialog=rename_dialog("draft_budget.ods", "budget_2027_q1")),
        thunar("Documents", "/home/user/Documents", renamed, selected="budget_2027_q1.ods",
               status="\"budget_2027_q1.ods\" (18.4 kB) OpenDocument Spreadsheet", back=True, place=None),
    ]
    s.append(copy.deepcopy(s[5]))
    docs = s[0][0].find("icon:Documents")
    budget = s[1][0].find("icon:draft_budget.ods")
    status = s[5][0].find("status")
    dx, dy = center(docs)
    bx, by = center(budget)
    sx, sy = status.geom[0] + 600, status.geom[1] + 13
    actions = [
        (f"pyautogui.doubleClick({dx}, {dy})", "open the Documents folder from the home folder (icon view)"),
        (f"pyautogui.click({bx}, {by})", "select draft_budget.ods; the status bar describes the selection"),
        ("pyautogui.press('f2')", "F2 opens Thunar's rename dialog with the base name selected"),
        ("pyautogui.write('budget_2027_q1')", "typing replaces the selected base name; the .ods extension stays"),
        ("pyautogui.press('enter')", "confirm: the dialog closes and the file is renamed and re-sorted"),
        (f"pyautogui.click({sx}, {sy})", "no-op: a click on the status bar text"),
        (None, "final state; no action taken"),
    ]
    preds = [
        (1, "Double-clicking the Documents icon opens that folder in the same window: new location, new icons, Back becomes available.",
         lambda x: replace_once(x, '<frame name="Documents - Thunar"', '<frame name="user - Thunar"')),
        (2, "A single click selects draft_budget.ods and focuses it; the status bar shows its size and type.", None),
        (3, "F2 opens the modal rename dialog for the selected file, with an entry holding the current name.",
         lambda x: replace_once(x, '<push-button name="Cancel" st:enabled="true" st:focusable="true" st:sensitive="true" st:showing="true" st:visible="true" attr:toolkit="gtk" cp:screencoord="(964, 589)" cp:windowcoord="(218, 124)" cp:size="(94, 34)" act:click_desc="Clicks the button" act:click_kb=""/>', "")),
        (4, "Typing replaces the text in the rename entry.",
         lambda x: replace_once(x, ">budget_2027_q1.ods</text>", ">budget_2027_q1</text>")),
        (5, "Enter confirms the rename; the dialog closes and the icon takes the new name.",
         lambda x: x.replace('<icon name="budget_2027_q1.ods"', '<icon name="@@"').replace(
             '<icon name="invoices"', '<icon name="budget_2027_q1.ods"').replace('<icon name="@@"', '<icon name="invoices"')),
        (6, "Clicking empty space in the status bar probably clears the selection.",
         lambda x: replace_once(x, '<icon name="budget_2027_q1.ods" st:enabled="true" st:focusable="true" st:focused="true" st:selectable="true" st:selected="true"',
                                '<icon name="budget_2027_q1.ods" st:enabled="true" st:focusable="true" st:selectable="true"')),
    ]
    write_os_trajectory(folder, "Rename draft_budget.ods in the Documents folder to budget_2027_q1.ods.", s, actions,
                        preds, "xml")


# =====================================================================================
# 2. Power Manager settings: switch tab, untick a checkbox (dependent sliders grey out), no-op, tab, untick
# =====================================================================================

PX, PY, PW, PH = 610, 230, 700, 560
PCX, PCY = PX + 1, PY + 20


def power(tab="General", dpms=True, lock=True, tray=True):
    tabs = ["General", "System", "Display", "Security"]
    tab_x = [PCX + 10, PCX + 96, PCX + 178, PCX + 264]
    tab_w = [86, 82, 86, 90]
    body_y = PCY + 52

    def page_st(name, extra=()):
        return (LIVE if tab == name else HIDDEN) | set(extra)

    def g(name, geom):
        return geom if tab == name else None

    def chk(page, label, checked, y, key, sensitive=True):
        st = page_st(page, ["focusable", "checkable"] + (["checked"] if checked else []))
        if not sensitive:
            st -= {"enabled", "sensitive"}
        return N("check-box", label, st=st, geom=g(page, (PCX + 30, y, 420, 24)), acts=[("click", "")], key=key)

    def lbl(page, text, y, x=PCX + 30, w=230, sensitive=True, key=None):
        st = page_st(page, ["multi_line"])
        if not sensitive:
            st -= {"enabled", "sensitive"}
        return N("label", text, st=st, geom=g(page, (x, y, w, 24)), text=text, key=key)

    def combo(page, name, y):
        return N("combo-box", name, N("menu", "", st=HIDDEN - {"visible"}, selection=True), st=page_st(page),
                 geom=g(page, (PCX + 300, y - 4, 240, 32)), selection=True, acts=[("press", "")])

    def slider(page, name, value, y, sensitive=True):
        st = page_st(page, ["focusable", "horizontal"])
        if not sensitive:
            st -= {"enabled", "sensitive"}
        return N("slider", name, st=st, geom=g(page, (PCX + 240, y, 300, 24)),
                 val=[("value", f"{value}.0"), ("min", "0.0"), ("max", "60.0"), ("step", "1.0")])

    general = N("panel", "",
                lbl("General", "Buttons", body_y + 10, w=120),
                lbl("General", "When power button is pressed:", body_y + 44, x=PCX + 30, w=260),
                combo("General", "Ask", body_y + 44),
                lbl("General", "When sleep button is pressed:", body_y + 82, x=PCX + 30, w=260),
                combo("General", "Do nothing", body_y + 82),
                lbl("General", "Appearance", body_y + 130, w=120),
                chk("General", "Show system tray icon", tray, body_y + 164, "tray"),
                chk("General", "Show notifications", True, body_y + 194, "notify"),
                st=page_st("General"), geom=g("General", (PCX + 10, body_y, PW - 22, 390)))
    system = N("panel", "",
               lbl("System", "System power saving", body_y + 10, w=200),
               lbl("System", "System sleep mode:", body_y + 44, w=200),
               combo("System", "Suspend", body_y + 44),
               lbl("System", "When inactive for", body_y + 82, w=200),
               slider("System", "When inactive for", 30, body_y + 82),
               lbl("System", "30 minutes", body_y + 82, x=PCX + 550, w=110),
               lbl("System", "Security", body_y + 130, w=120),
               chk("System", "Lock screen when system is going to sleep", lock, body_y + 164, "lock"),
               st=page_st("System"), geom=g("System", (PCX + 10, body_y, PW - 22, 390)))
    display = N("panel", "",
                chk("Display", "Display power management", dpms, body_y + 10, "dpms"),
                lbl("Display", "Blank after", body_y + 52, sensitive=dpms, key="blank_label"),
                slider("Display", "Blank after", 10, body_y + 52, dpms),
                lbl("Display", "10 minutes", body_y + 52, x=PCX + 550, w=110, sensitive=dpms),
                lbl("Display", "Put to sleep after", body_y + 88, sensitive=dpms),
                slider("Display", "Put to sleep after", 15, body_y + 88, dpms),
                lbl("Display", "15 minutes", body_y + 88, x=PCX + 550, w=110, sensitive=dpms),
                lbl("Display", "Switch off after", body_y + 124, sensitive=dpms),
                slider("Display", "Switch off after", 20, body_y + 124, dpms),
                lbl("Display", "20 minutes", body_y + 124, x=PCX + 550, w=110, sensitive=dpms),
                st=page_st("Display"), geom=g("Display", (PCX + 10, body_y, PW - 22, 390)))
    security = N("panel", "",
                 lbl("Security", "Light Locker", body_y + 10, w=200),
                 lbl("Security", "Automatically lock the session:", body_y + 44, w=260),
                 combo("Security", "Never", body_y + 44),
                 st=page_st("Security"), geom=g("Security", (PCX + 10, body_y, PW - 22, 390)))
    pages = {"General": general, "System": system, "Display": display, "Security": security}
    tab_nodes = []
    for i, t in enumerate(tabs):
        st = live("selectable") | ({"selected"} if t == tab else set())
        tab_nodes.append(N("page-tab", t, pages[t], st=st, geom=(tab_x[i], PCY + 12, tab_w[i], 34),
                           key=f"tab:{t}"))
    frame = N("frame", "Power Manager",
              N("filler", "",
                N("page-tab-list", "", *tab_nodes, st=live(), geom=(PCX + 10, PCY + 12, PW - 22, 440), selection=True),
                N("filler", "",
                  N("push-button", "Help", st=live("focusable"), geom=(PCX + 10, PCY + PH - 66, 90, 34),
                    acts=[("click", "")]),
                  N("push-button", "Close", st=live("focusable"), geom=(PCX + PW - 112, PCY + PH - 66, 90, 34),
                    acts=[("click", "")]),
                  st=live("horizontal"), geom=(PCX + 10, PCY + PH - 70, PW - 22, 42)),
                st=live("vertical"), geom=(PCX, PCY, PW - 2, PH - 21)),
              st=live("active", "resizable"), attrs={"window-type": "normal"}, desc="Settings for the Xfce Power Manager",
              geom=(PX, PY, PW, PH), win=(PCX, PCY))
    return [N("application", "xfce4-power-manager-settings", frame, toolkit=None)]


def build_power(root):
    folder = os.path.join(root, "os", "power-manager_toggle_trajectory")
    s = [power(), power("Display"), power("Display", dpms=False), power("Display", dpms=False),
         power("System", dpms=False), power("System", dpms=False, lock=False)]
    t_display = center(s[0][0].find("tab:Display"))
    dpms = center(s[1][0].find("dpms"))
    blank = center(s[2][0].find("blank_label"))
    t_system = center(s[3][0].find("tab:System"))
    lock = center(s[4][0].find("lock"))
    actions = [
        (f"pyautogui.click({t_display[0]}, {t_display[1]})", "open the Display tab"),
        (f"pyautogui.click({dpms[0] - 190}, {dpms[1]})", "untick 'Display power management'; its three sliders and labels become insensitive"),
        (f"pyautogui.click({blank[0]}, {blank[1]})", "no-op: click on the greyed-out 'Blank after' label"),
        (f"pyautogui.click({t_system[0]}, {t_system[1]})", "open the System tab"),
        (f"pyautogui.click({lock[0] - 190}, {lock[1]})", "untick 'Lock screen when system is going to sleep'"),
        (None, "final state; no action taken"),
    ]
    preds = [
        (1, "Clicking the Display tab shows its page; the General page is hidden.",
         lambda x: replace_once(x, '<page-tab name="General" st:enabled="true" st:selectable="true" st:sensitive="true" st:showing="true" st:visible="true"',
                                '<page-tab name="General" st:enabled="true" st:selectable="true" st:selected="true" st:sensitive="true" st:showing="true" st:visible="true"').replace(
             '<page-tab name="Display" st:enabled="true" st:selectable="true" st:selected="true"', '<page-tab name="Display" st:enabled="true" st:selectable="true"')),
        (2, "The checkbox is unticked; nothing else on the page depends on it.",
         lambda x: x.replace('<slider name="Blank after" st:focusable="true" st:horizontal="true" st:showing="true" st:visible="true"',
                             '<slider name="Blank after" st:enabled="true" st:focusable="true" st:horizontal="true" st:sensitive="true" st:showing="true" st:visible="true"')),
        (3, "The label is insensitive and not interactive, so the click changes nothing.", None),
        (4, "The System tab becomes the current page and shows the sleep and lock settings.",
         lambda x: x.replace('>30 minutes</label>', '>30 min</label>').replace('name="30 minutes"', 'name="30 min"')),
        (5, "Clicking the lock checkbox focuses it.",
         lambda x: replace_once(x, '<check-box name="Lock screen when system is going to sleep" st:checkable="true" st:enabled="true"',
                                '<check-box name="Lock screen when system is going to sleep" st:checkable="true" st:checked="true" st:enabled="true"')),
    ]
    write_os_trajectory(folder, "In Power Manager, turn off display power management and stop locking the screen when the "
                        "system goes to sleep.", s, actions, preds, "xml")


# =====================================================================================
# 3. Pluma text editor: type, open Edit menu, Esc, no-op click on insensitive Redo, Ctrl+S dialog
# =====================================================================================

EX, EY, EW, EH = 400, 160, 1120, 760
ECX, ECY = EX + 1, EY + 20
LINE = "Grocery list: oats, lemons, basil, coffee"


def pluma(text="", menu_open=False, dialog=None):
    modified = bool(text)
    title = ("*" if modified else "") + "Unsaved Document 1"
    edit_items = [("menu-item", "Undo", "Undo the last action", modified),
                  ("menu-item", "Redo", "Redo the last undone action", False),
                  ("separator", "", "", True),
                  ("menu-item", "Cut", "Cut the selection", False),
                  ("menu-item", "Copy", "Copy the selection", False),
                  ("menu-item", "Paste", "Paste the clipboard", True),
                  ("menu-item", "Delete", "Delete the selected text", False),
                  ("separator", "", "", True),
                  ("menu-item", "Select All", "Select the entire document", True),
                  ("menu-item", "Insert Date and Time...", "Insert current date and time at the cursor position", True),
                  ("separator", "", "", True),
                  ("menu-item", "Preferences", "Configure the application", True)]
    bar = N("menu-bar", "",
            menu("File", ECX, ECY, 39, [("menu-item", "New", "Create a new document", True),
                                        ("menu-item", "Open...", "Open a file", True),
                                        ("menu-item", "Save", "Save the current file", True),
                                        ("menu-item", "Save As...", "Save the current file with a different name", True),
                                        ("menu-item", "Quit", "Quit the program", True)], kb="<Alt>f"),
            menu("Edit", ECX + 39, ECY, 41, edit_items, is_open=menu_open, kb="<Alt>e"),
            menu("View", ECX + 80, ECY, 48, [("check-menu-item", "Toolbar", "", True),
                                             ("check-menu-item", "Statusbar", "", True)], kb="<Alt>v"),
            menu("Search", ECX + 128, ECY, 60, [("menu-item", "Find...", "Search for text", True)], kb="<Alt>s"),
            menu("Help", ECX + 188, ECY, 46, [("menu-item", "About", "About this application", True)], kb="<Alt>h"),
            st=LIVE, geom=(ECX, ECY, EW - 2, 25), selection=True)
    ty = ECY + 25

    def tb(name, x, sensitive, desc):
        st = {"focusable", "has_tooltip", "showing", "visible"} | ({"enabled", "sensitive"} if sensitive else set())
        return N("push-button", name, st=st, geom=(x, ty + 3, 40, 38), desc=desc, image=True, acts=[("click", "")],
                 key=f"tb:{name}")

    toolbar = N("tool-bar", "",
                tb("New", ECX + 4, True, "Create a new document"),
                tb("Open", ECX + 46, True, "Open a file"),
                tb("Save", ECX + 88, True, "Save the current file"),
                tb("Print", ECX + 138, True, "Print the current page"),
                tb("Undo", ECX + 188, modified, "Undo the last action"),
                tb("Redo", ECX + 230, False, "Redo the last undone action"),
                tb("Cut", ECX + 280, False, "Cut the selection"),
                tb("Copy", ECX + 322, False, "Copy the selection"),
                tb("Paste", ECX + 364, True, "Paste the clipboard"),
                tb("Find", ECX + 414, True, "Search for text"),
                st=live("horizontal"), geom=(ECX, ty, EW - 2, 44))
    doc_y = ty + 44
    col = len(text) + 1
    editor = N("page-tab-list", "",
               N("page-tab", title, N("scroll-pane", "",
                                      N("text", "", st=live("editable", "focusable", "multi_line", "selectable_text")
                                        | ({"focused"} if (not menu_open and dialog is None) else set()),
                                        geom=(ECX + 1, doc_y + 33, EW - 20, EH - 160), text=text or None, key="doc"),
                                      st=live("focusable"), geom=(ECX, doc_y + 32, EW - 2, EH - 158)),
                 st=live("selectable", "selected"), geom=(ECX + 2, doc_y + 2, 220, 28), desc=f"Name: {title}"),
               st=live(), geom=(ECX, doc_y, EW - 2, EH - 126), selection=True)
    status = N("status-bar", "",
               N("label", f"Ln 1, Col {col}", st=live(), geom=(ECX + EW - 300, EY + EH - 30, 110, 24),
                 text=f"  Ln 1, Col {col}"),
               N("label", "INS", st=live(), geom=(ECX + EW - 150, EY + EH - 30, 40, 24), text="INS"),
               st=live(), geom=(ECX, EY + EH - 32, EW - 2, 28))
    frame = N("frame", f"{title} - Pluma",
              N("filler", "", bar, toolbar, editor, status, st=live("vertical"), geom=(ECX, ECY, EW - 2, EH - 21)),
              st=live("resizable") | ({"active"} if dialog is None else set()), attrs={"window-type": "normal"},
              geom=(EX, EY, EW, EH), win=(ECX, ECY))
    app = N("application", "pluma", frame, toolkit=None)
    if dialog is not None:
        app.children.append(dialog)
    return [app]


def save_dialog():
    dx, dy, dw, dh = 560, 200, 800, 600
    ox, oy = dx + 1, dy + 20
    places = []
    for i, (pname, desc) in enumerate([("Recent", "Recent files"), ("Home", "Open your personal folder"),
                                       ("Documents", "/home/user/Documents"), ("Desktop", "Open the contents of your desktop in a folder"),
                                       ("Other Locations", "Show other locations")]):
        st = live("focusable", "has_tooltip", "selectable") | ({"selected"} if pname == "Documents" else set())
        places.append(N("list-item", "", N("label", pname, st=live("multi_line"), geom=(ox + 38, oy + 70 + 38 * i, 110, 36),
                                           text=pname),
                        st=st, geom=(ox, oy + 70 + 38 * i, 160, 36), desc=desc))
    files = []
    for i, fname in enumerate(["invoices", "meeting-notes.txt", "reading-list.md", "trip_plan.odt"]):
        files.append(N("table-cell", fname, st=live("selectable", "transient"),
                       geom=(ox + 172, oy + 96 + 27 * i, 380, 26), text=fname))
    return N("file-chooser", "Save As",
             N("filler", "",
               N("label", "Name:", st=live("multi_line"), geom=(ox + 200, oy + 16, 50, 34), text="Name:"),
               N("text", "", st=live("editable", "focusable", "focused", "single_line", "selectable_text"),
                 geom=(ox + 256, oy + 16, 340, 34), text="Unsaved Document 1", acts=[("activate", "")]),
               N("push-button", "Documents", st=live("focusable", "checkable", "checked"), geom=(ox + 172, oy + 58, 120, 30),
                 acts=[("click", "")]),
               N("scroll-pane", "Places", N("list-box", "", *places, st=live("manages_descendants"),
                                            geom=(ox, oy + 66, 160, 440), selection=True),
                 st=live("focusable"), geom=(ox, oy + 66, 160, 440)),
               N("scroll-pane", "", N("table", "Files",
                                      N("table-column-header", "Name", st=live(), geom=(ox + 172, oy + 68, 380, 26),
                                        image=True, acts=[("click", "")]),
                                      N("table-column-header", "Size", st=live(), geom=(ox + 552, oy + 68, 80, 26),
                                        image=True, acts=[("click", "")]),
                                      N("table-column-header", "Modified", st=live(), geom=(ox + 632, oy + 68, 150, 26),
                                        image=True, acts=[("click", "")]),
                                      *files, st=live("focusable", "manages_descendants"), geom=(ox + 172, oy + 68, 610, 440),
                                      selection=True),
                 st=live("focusable"), geom=(ox + 172, oy + 68, 610, 440)),
               N("combo-box", "Character Encoding: Current Locale (UTF-8)", st=live(), geom=(ox + 172, oy + 516, 300, 30),
                 selection=True, acts=[("press", "")]),
               N("push-button", "Cancel", st=live("focusable"), geom=(ox + 580, oy + 540, 96, 34), acts=[("click", "")]),
               N("push-button", "Save", st=live("focusable", "default"), geom=(ox + 682, oy + 540, 96, 34), acts=[("click", "")]),
               st=live("vertical"), geom=(ox, oy, dw - 2, dh - 21)),
             st=live("active", "modal", "resizable"), attrs={"window-type": "dialog"}, geom=(dx, dy, dw, dh), win=(ox, oy))


def build_pluma(root):
    folder = os.path.join(root, "os", "pluma_edit-menu_trajectory")
    s = [pluma(), pluma(LINE), pluma(LINE, menu_open=True), pluma(LINE), pluma(LINE), pluma(LINE, dialog=save_dialog())]
    edit = s[1][0].children[0].children[0].children[0].children[1]
    ex, ey = center(edit)
    redo = center(s[3][0].find("tb:Redo"))
    actions = [
        (f"pyautogui.write('{LINE}')", "type one line into the empty document; the title and tab gain a '*'"),
        (f"pyautogui.click({ex}, {ey})", "open the Edit menu"),
        ("pyautogui.press('esc')", "close the menu with Escape"),
        (f"pyautogui.click({redo[0]}, {redo[1]})", "no-op: click the insensitive Redo toolbar button"),
        ("pyautogui.hotkey('ctrl', 's')", "Ctrl+S on an unsaved document opens the Save As dialog"),
        (None, "final state; no action taken"),
    ]
    preds = [
        (1, "The typed line appears in the document and the cursor moves to its end; the title gets a modified marker.",
         lambda x: x.replace("Ln 1, Col 42", "Ln 1, Col 1")),
        (2, "The Edit menu drops down below the menu bar with its items; only the enabled ones get rows.",
         lambda x: drop_line(x, "menu-item\tInsert Date and Time...\t")),
        (3, "Escape closes the menu and returns focus to the document.", None),
        (4, "The Redo button is greyed out, so nothing happens.",
         lambda x: replace_once(x, "push-button\tPaste\t", "push-button\tRedo\t\"\"\t\tRedo the last undone action\t(631, 208)\t(40, 38)\npush-button\tPaste\t")),
        (5, "Ctrl+S on an unsaved document opens the Save As file chooser with a suggested name.",
         lambda x: replace_once(x, "text\t\tUnsaved Document 1\t", "text\t\tUntitled Document 1.txt\t")),
    ]
    write_os_trajectory(folder, "Write the grocery list line in the open Pluma document, look at the Edit menu, then start "
                        "saving the document.", s, actions, preds, "tsv")


def build_all(root):
    build_thunar(root)
    build_power(root)
    build_pluma(root)
