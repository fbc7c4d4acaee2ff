"""cancel_and_wait stops a task that swallows the first cancel."""

from __future__ import annotations

import asyncio

from broker.tasks import cancel_and_wait


def test_a_task_that_swallows_one_cancel_is_still_stopped() -> None:
    async def main() -> int:
        swallowed = 0

        async def stubborn() -> None:
            nonlocal swallowed
            while True:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    swallowed += 1
                    if swallowed > 2:
                        raise
        task = asyncio.create_task(stubborn())
        await asyncio.sleep(0)
        await asyncio.wait_for(cancel_and_wait(task, retry_s=0.01), 5)
        assert task.cancelled()
        return swallowed
    assert asyncio.run(main()) == 3


def test_a_finished_task_is_left_as_it_is() -> None:
    async def main() -> None:
        task = asyncio.create_task(asyncio.sleep(0, result=7))
        await task
        await cancel_and_wait(task)
        assert task.result() == 7
    asyncio.run(main())


def test_bounded_step_leaves_a_hanging_step_behind_and_swallows_failures(caplog) -> None:  # noqa: ANN001
    from broker.tasks import bounded_step

    async def main() -> None:
        hang = asyncio.Event()
        started = asyncio.get_running_loop().time()
        await bounded_step("a hanging thing", hang.wait(), 0.05)
        assert asyncio.get_running_loop().time() - started < 1.0

        async def fail() -> None:
            raise RuntimeError("boom")
        await bounded_step("a failing thing", fail(), 1.0)
    asyncio.run(main())
    text = caplog.text
    assert "a hanging thing did not stop within" in text and "a failing thing failed" in text
