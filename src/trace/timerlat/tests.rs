use super::*;

fn tracefs_with(tracers: Option<&str>) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    if let Some(tracers) = tracers {
        std::fs::write(t.path().join("available_tracers"), tracers).unwrap();
    }
    t
}

#[test]
fn the_kernels_tracer_where_it_is_listed() {
    let with = tracefs_with(Some("timerlat osnoise hwlat function nop\n"));
    let root = with.path().to_path_buf();
    assert_eq!(
        choose(None, Ok(root.clone())),
        Ok(Choice::Kernel(root.clone()))
    );
    assert_eq!(
        choose(Some(Engine::Kernel), Ok(root.clone())),
        Ok(Choice::Kernel(root.clone()))
    );
    // Asked for, jitterlab's own threads even where the kernel has its tracer.
    assert_eq!(choose(Some(Engine::Own), Ok(root)), Ok(Choice::Own(None)));
}

#[test]
fn own_threads_elsewhere_saying_why() {
    // This project's kernel: osnoise-family tracers absent ("timerlatx" is not "timerlat").
    let without = tracefs_with(Some("blk function_graph function timerlatx nop\n"));
    let root = without.path().to_path_buf();
    match choose(None, Ok(root.clone())) {
        Ok(Choice::Own(Some(why))) => {
            assert!(why.contains("no timerlat tracer"), "{why}");
            assert!(why.contains("CONFIG_TIMERLAT_TRACER"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    // Asked for the kernel's: refused with the reason and the way out.
    let e = choose(Some(Engine::Kernel), Ok(root)).unwrap_err();
    assert!(e.contains("no timerlat tracer") && e.contains("own"), "{e}");
    // No tracefs (not mounted, not root): the reason tracefs gave, without its --trace prefix.
    match choose(
        None,
        Err("--trace: tracefs is not mounted; mount it".into()),
    ) {
        Ok(Choice::Own(Some(why))) => assert_eq!(why, "tracefs is not mounted; mount it"),
        other => panic!("{other:?}"),
    }
    // available_tracers unreadable: said, not guessed.
    let unreadable = tracefs_with(None);
    let e = choose(Some(Engine::Kernel), Ok(unreadable.path().to_path_buf())).unwrap_err();
    assert!(
        e.contains("cannot read") && e.contains("available_tracers"),
        "{e}"
    );
}

#[test]
fn another_osnoise_tracer_is_found() {
    let t = tracefs_with(Some("timerlat nop\n"));
    std::fs::write(t.path().join("current_tracer"), "nop\n").unwrap();
    std::fs::create_dir_all(t.path().join("instances/rtla")).unwrap();
    std::fs::write(t.path().join("instances/rtla/current_tracer"), "nop\n").unwrap();
    assert_eq!(osnoise_tracer_in_use(t.path()), None);
    std::fs::write(t.path().join("instances/rtla/current_tracer"), "timerlat\n").unwrap();
    assert_eq!(
        osnoise_tracer_in_use(t.path()),
        Some(t.path().join("instances/rtla/current_tracer"))
    );
}
