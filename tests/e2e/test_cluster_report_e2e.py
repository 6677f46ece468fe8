"""The Multi-process page's real-cluster tabs in Chromium: a report uploaded, a file that is
not one, a report opened from the reports folder named at start-up, and the launch lines, at
1280x720 too (screenshots)."""

import shutil

import pytest
from playwright.sync_api import expect

from harness import EXCEPTIONS, MAIN, ROOT, fresh_server, screenshot, wait_rendered

pytestmark = pytest.mark.e2e
REPORT = ROOT / "tests/core/fixtures/cluster-report-slurm-4x2.json"
UPLOAD = '[data-testid="stFileUploader"] input[type="file"]'


# a long walk (tests/rotation.py): every run opens a report from the folder in AppTest
# (tests/pages/test_cluster_page.py) and an upload (tests/features/cluster/ui/test_report_view.py)
@pytest.mark.rotates(cpu_s=11)
def test_an_uploaded_report_draws_the_real_cluster(server, page):
    page.goto(f"{server}/cluster")
    wait_rendered(page)
    page.get_by_role("tab", name="Show a report").click()
    main = page.locator(MAIN)
    expect(main).to_contain_text("No reports folder was named at start-up")
    page.locator(UPLOAD).set_input_files(str(REPORT))
    expect(main).to_contain_text("1 host, 4 processes, 8 global devices")
    expect(main).to_contain_text("psum = 36 in every process, equal to numpy")
    expect(main).to_contain_text("process 3 · axis 7")
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    wait_rendered(page)
    screenshot(page, "cluster-report")
    bad = {"name": "bad.json", "mimeType": "application/json", "buffer": b"{oops"}
    page.locator(UPLOAD).set_input_files(files=[bad])
    expect(main).to_contain_text("This report cannot be shown: The file is not valid JSON")
    expect(page.locator(EXCEPTIONS)).to_have_count(0)


# a long walk (tests/rotation.py): a server of its own; every run opens a report from the folder
# and draws the launch lines in AppTest (tests/pages/test_cluster_page.py)
@pytest.mark.rotates(cpu_s=12)
def test_a_report_from_the_folder_and_the_launch_lines_at_1280x720(browser, tmp_path):
    shutil.copy(REPORT, tmp_path / "slurm.json")
    args = ["--devices", "2", "--reports", str(tmp_path)]
    with fresh_server(args, browser, viewport=(1280, 720)) as (url, page):
        page.goto(f"{url}/cluster?report=slurm.json&nodes=2&ppn=4&dpp=2&kind=gpu")
        wait_rendered(page)
        page.get_by_role("tab", name="Show a report").click()
        main = page.locator(MAIN)
        expect(main).to_contain_text("slurm.json in the reports folder")
        expect(main).to_contain_text("4 processes, 8 global devices")
        wait_rendered(page)
        screenshot(page, "cluster-report-1280")
        page.get_by_role("tab", name="Launch lines").click()
        expect(main).to_contain_text("srun -N 2 --ntasks-per-node 4 --gpus-per-node 8 bash -c")
        expect(main).to_contain_text("gcloud compute tpus tpu-vm ssh")
        wait_rendered(page)
        screenshot(page, "cluster-launch-lines-1280")
        expect(page.locator(EXCEPTIONS)).to_have_count(0)
