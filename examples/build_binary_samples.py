"""Rebuild the binary sample documents (one DOCX, one PDF) under examples/materials.

The texts below were written for ragloom's sample corpus. Run with the dev extra installed:
    .venv/bin/python examples/build_binary_samples.py
"""

from __future__ import annotations

from pathlib import Path

MATERIALS = Path(__file__).parent / "materials"

PRD = [
    ("title", "PRD: Service Catalog v2"),
    ("p", "Author: Priya Raman, Senior Product Manager. Last updated: February 3, 2025. Status: In review."),
    ("h1", "Problem"),
    ("p", "Office managers at plumbing, HVAC and electrical companies re-type prices from spreadsheets into "
          "every quote and invoice. Prices drift between technicians, discounts are applied inconsistently, and "
          "month-end reconciliation with QuickBooks takes two to three days for a 20-technician company."),
    ("h1", "Goals"),
    ("li", "Give every account one catalog of services, parts and labour rates that quotes and invoices draw from."),
    ("li", "Support price books per customer segment (residential, commercial, warranty)."),
    ("li", "Sync catalog items to QuickBooks Online as products and services."),
    ("h1", "Non-goals"),
    ("li", "Inventory tracking across warehouses and trucks is out of scope for v2."),
    ("li", "Supplier price feeds are out of scope; prices are entered or imported from CSV."),
    ("h1", "Requirements"),
    ("h2", "Catalog structure"),
    ("p", "A catalog item has a name, a code, a category, a unit (hour, each, foot), a cost, a price and an "
          "optional margin floor. Items can be grouped into bundles, for example a water heater installation "
          "bundle with the heater, fittings and three hours of labour."),
    ("h2", "Price books"),
    ("p", "An account can define up to ten price books. Each customer is assigned one price book; quotes use it "
          "automatically. Warranty work uses a zero-price book with cost tracking."),
    ("h2", "QuickBooks sync"),
    ("p", "Catalog items map to QuickBooks products and services. Changes in Fieldline are pushed within five "
          "minutes through the event bus; changes made in QuickBooks are pulled every fifteen minutes. Conflicts "
          "are resolved in favour of the most recent change and logged."),
    ("h1", "Milestones"),
    ("p", "Beta with 20 design partners, including Brightwater Plumbing and Apex HVAC: May 12, 2025."),
    ("p", "General availability of the catalog integration: June 30, 2025 (Q2 2025)."),
    ("p", "CPQ builds on the catalog and starts in Q3 2025."),
    ("h1", "Open questions"),
    ("p", "Will the event bus be ready in time for the QuickBooks push? Engineering estimates are still pending."),
]

CAPACITY = [
    ("title", "Engineering Capacity Plan 2025"),
    ("p", "Prepared by Dev Patel, VP Engineering, February 25, 2025, in answer to the action item from the "
          "Q2 planning sync."),
    ("h1", "Headcount"),
    ("p", "Engineering has 18 engineers today in four squads: Dispatch (5), Platform (2), Integrations (4) and "
          "Mobile (4), plus 3 in the front-end guild. With the current offer acceptance rate we expect 21 "
          "engineers by June 2025, not the 24 the roadmap assumes."),
    ("h1", "Capacity by quarter"),
    ("p", "After support rotation, on-call and technical debt, each engineer delivers about 0.7 engineer-months "
          "of roadmap work per month. Q2 2025 has about 38 engineer-months of roadmap capacity and Q3 2025 "
          "about 44."),
    ("h1", "Commitments"),
    ("h2", "Catalog integration"),
    ("p", "The catalog screens fit in Q2 2025. The QuickBooks sync depends on the event bus migration, which "
          "the platform squad cannot finish before mid-July 2025. General availability of the catalog "
          "integration is therefore planned for August 2025, in Q3."),
    ("h2", "CPQ"),
    ("p", "CPQ needs 12 engineer-months and the finished catalog. It cannot start before September 2025 and "
          "will ship in Q4 2025."),
    ("h2", "Offline mode"),
    ("p", "A read-only offline mode needs two mobile engineers for six weeks, after the local database "
          "migration in the technical debt register. It fits in Q3 2025 if CPQ starts in September."),
    ("h1", "Recommendation"),
    ("p", "Move CPQ to Q4 2025 and the Customer Portal to 2026, and plan every quarter at 85% of nominal "
          "capacity."),
]


def build_docx(path: Path) -> None:
    import docx

    d = docx.Document()
    d.core_properties.title = PRD[0][1]
    for kind, text in PRD:
        if kind == "title":
            d.add_heading(text, 0)
        elif kind in ("h1", "h2"):
            d.add_heading(text, int(kind[1]))
        elif kind == "li":
            d.add_paragraph(text, style="List Bullet")
        else:
            d.add_paragraph(text)
    d.save(path)


def build_pdf(path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(CAPACITY[0][1])
    pdf.set_author("Dev Patel")
    pdf.add_page()
    sizes = {"title": 18, "h1": 14, "h2": 12}
    for kind, text in CAPACITY:
        if kind in sizes:
            pdf.set_font("Helvetica", "B", sizes[kind])
            pdf.ln(3)
            pdf.multi_cell(0, 8, text, new_x="LMARGIN", new_y="NEXT")
        else:
            pdf.set_font("Helvetica", size=11)
            pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
    pdf.output(str(path))


if __name__ == "__main__":
    build_docx(MATERIALS / "team-structured" / "prd-service-catalog-v2.docx")
    build_pdf(MATERIALS / "engineering" / "capacity-plan-2025.pdf")
    print("wrote the DOCX and PDF samples")
