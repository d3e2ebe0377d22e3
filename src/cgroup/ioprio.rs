//! I/O priorities: a class and a level per task, as `ioprio_set(2)` takes
//! them and as every request carries them.
//!
//! Encoding and ranges are the kernel's (`include/uapi/linux/ioprio.h`):
//! the class sits above bit 13 of a 16-bit value, the level in the low 3
//! bits (the bits in between hold hints in kernels >= 6.5, not modelled).
//! A task that never called `ioprio_set` has class NONE and is served at the
//! best-effort level its nice value maps to (`include/linux/ioprio.h`,
//! `task_nice_ioprio`); fio's `prioclass=`/`prio=` set an explicit priority
//! (fio `backend.c`, `os/os-linux.h` `ioprio_value`).

/// `IOPRIO_CLASS_SHIFT` (include/uapi/linux/ioprio.h).
pub const IOPRIO_CLASS_SHIFT: u32 = 13;
/// `IOPRIO_CLASS_MASK` (include/uapi/linux/ioprio.h): 3 bits of class.
pub const IOPRIO_CLASS_MASK: u16 = 0x07;
/// `IOPRIO_PRIO_MASK` (include/uapi/linux/ioprio.h): the 13 data bits.
pub const IOPRIO_PRIO_MASK: u16 = (1 << IOPRIO_CLASS_SHIFT) - 1;
/// `IOPRIO_LEVEL_NR_BITS` (include/uapi/linux/ioprio.h).
pub const IOPRIO_LEVEL_NR_BITS: u32 = 3;
/// `IOPRIO_NR_LEVELS` (include/uapi/linux/ioprio.h): levels 0 (highest) ..= 7.
pub const IOPRIO_NR_LEVELS: u8 = 1 << IOPRIO_LEVEL_NR_BITS;
/// `IOPRIO_LEVEL_MASK` (include/uapi/linux/ioprio.h).
pub const IOPRIO_LEVEL_MASK: u16 = IOPRIO_NR_LEVELS as u16 - 1;
/// `IOPRIO_NORM` / `IOPRIO_BE_NORM` (include/uapi/linux/ioprio.h): the
/// fallback best-effort level, also what nice 0 maps to.
pub const IOPRIO_NORM: u8 = 4;

/// The kernel's priority level for a task without an explicit ioprio at
/// nice 0: `task_nice_ioprio` = (nice + 20) / 5 = 4.
pub const IOPRIO_DEFAULT_LEVEL: u8 = nice_to_level(0);

/// Linux I/O priority class (`IOPRIO_CLASS_*`, include/uapi/linux/ioprio.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum IoPrioClass {
    /// No explicit class: served as the CPU scheduling class maps it
    /// (`task_nice_ioclass`: best effort for a normal task).
    #[default]
    None = 0,
    /// Real time: served before everything else.
    Rt = 1,
    /// Best effort: the default.
    Be = 2,
    /// Idle: served only when nobody else wants the disk.
    Idle = 3,
}

impl IoPrioClass {
    /// The class with this number (fio's `prioclass=` and the top bits of an
    /// ioprio value); `None` for 4..7, which the kernel rejects
    /// (`ioprio_check_cap` in block/ioprio.c: -EINVAL).
    pub fn from_number(n: u16) -> Option<IoPrioClass> {
        match n {
            0 => Some(IoPrioClass::None),
            1 => Some(IoPrioClass::Rt),
            2 => Some(IoPrioClass::Be),
            3 => Some(IoPrioClass::Idle),
            _ => None,
        }
    }

    /// `IOPRIO_CLASS_*` number.
    pub fn number(self) -> u16 {
        self as u16
    }

    /// The name `ionice` and sysfs use.
    pub fn name(self) -> &'static str {
        match self {
            IoPrioClass::None => "none",
            IoPrioClass::Rt => "realtime",
            IoPrioClass::Be => "best-effort",
            IoPrioClass::Idle => "idle",
        }
    }
}

/// `task_nice_ioprio` (include/linux/ioprio.h): a nice value's best-effort
/// level, (nice + 20) / 5; nice is clamped to the kernel's -20..=19 first.
pub const fn nice_to_level(nice: i32) -> u8 {
    let n = if nice < -20 {
        -20
    } else if nice > 19 {
        19
    } else {
        nice
    };
    ((n + 20) / 5) as u8
}

/// An I/O priority: class and level (0..=7, 0 highest).
///
/// `Default` is the kernel's `IOPRIO_DEFAULT` (class NONE, level 0). A
/// simulated task without `prio=`/`prioclass=` carries class NONE with the
/// level its nice value maps to ([`IoPrio::task_default`]), which is what
/// CFQ and BFQ serve it at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct IoPrio {
    pub class: IoPrioClass,
    pub level: u8,
}

impl IoPrio {
    /// A priority of `class` at `level`; `None` when the level is not below
    /// `IOPRIO_NR_LEVELS`.
    pub fn new(class: IoPrioClass, level: u8) -> Option<IoPrio> {
        (level < IOPRIO_NR_LEVELS).then_some(IoPrio { class, level })
    }

    /// A task that never set its I/O priority, at nice 0: class NONE, level
    /// [`IOPRIO_DEFAULT_LEVEL`].
    pub const fn task_default() -> IoPrio {
        IoPrio {
            class: IoPrioClass::None,
            level: IOPRIO_DEFAULT_LEVEL,
        }
    }

    /// `IOPRIO_PRIO_VALUE(class, level)` (include/uapi/linux/ioprio.h):
    /// class << 13 | level.
    pub fn value(self) -> u16 {
        (self.class.number() << IOPRIO_CLASS_SHIFT) | (u16::from(self.level) & IOPRIO_LEVEL_MASK)
    }

    /// Back from an ioprio value: `IOPRIO_PRIO_CLASS` and `IOPRIO_PRIO_LEVEL`.
    /// `None` for classes 4..7 or data bits above the level (hints), which
    /// this model does not carry.
    pub fn from_value(v: u16) -> Option<IoPrio> {
        let class = IoPrioClass::from_number((v >> IOPRIO_CLASS_SHIFT) & IOPRIO_CLASS_MASK)?;
        if v & IOPRIO_PRIO_MASK & !IOPRIO_LEVEL_MASK != 0 {
            return None;
        }
        Some(IoPrio {
            class,
            level: (v & IOPRIO_LEVEL_MASK) as u8,
        })
    }

    /// The class and level a scheduler serves: NONE becomes best effort at
    /// the same level (`task_nice_ioclass` for a normal task; 6.x does this
    /// in `__get_task_ioprio`, block/ioprio.c; 4.19 CFQ in
    /// `cfq_init_prio_data`).
    pub fn effective(self) -> IoPrio {
        match self.class {
            IoPrioClass::None => IoPrio {
                class: IoPrioClass::Be,
                level: self.level,
            },
            _ => self,
        }
    }

    /// The priority a fio job runs with, from its `prioclass=` and `prio=`.
    ///
    /// fio calls `ioprio_set` only when one of them is given (backend.c),
    /// with `ioprio_value(class, level)` (os/os-linux.h): an unset or zero
    /// class becomes best effort, an unset level is 0 (the option's default).
    /// With neither, the task keeps the kernel's default ([`IoPrio::task_default`]).
    pub fn from_fio(prioclass: Option<IoPrioClass>, prio: Option<u8>) -> IoPrio {
        if prioclass.is_none() && prio.is_none() {
            return IoPrio::task_default();
        }
        let class = match prioclass {
            None | Some(IoPrioClass::None) => IoPrioClass::Be,
            Some(c) => c,
        };
        IoPrio {
            class,
            level: prio.unwrap_or(0) & IOPRIO_LEVEL_MASK as u8,
        }
    }

    /// fio's `td->ioprio` (what `log_prio=1` prints): the value fio passed to
    /// `ioprio_set`, or 0 when it did not call it.
    pub fn fio_value(prioclass: Option<IoPrioClass>, prio: Option<u8>) -> u16 {
        if prioclass.is_none() && prio.is_none() {
            0
        } else {
            IoPrio::from_fio(prioclass, prio).value()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use IoPrioClass::{Be, Idle, None as NoClass, Rt};

    #[test]
    fn kernel_constants() {
        assert_eq!(IOPRIO_NR_LEVELS, 8);
        assert_eq!(IOPRIO_PRIO_MASK, 0x1fff);
        assert_eq!(IOPRIO_DEFAULT_LEVEL, 4);
        assert_eq!(IOPRIO_NORM, IOPRIO_DEFAULT_LEVEL);
        assert_eq!(IoPrio::default().value(), 0, "IOPRIO_DEFAULT is NONE/0");
    }

    #[test]
    fn encoding_matches_ioprio_prio_value() {
        // Values fio 3.33 logs under log_prio=1 (tests/logs.rs): RT 3 = 0x2003.
        assert_eq!(
            IoPrio {
                class: Rt,
                level: 3
            }
            .value(),
            0x2003
        );
        assert_eq!(
            IoPrio {
                class: Be,
                level: 5
            }
            .value(),
            0x4005
        );
        assert_eq!(
            IoPrio {
                class: Idle,
                level: 0
            }
            .value(),
            0x6000
        );
        assert_eq!(
            IoPrio {
                class: Be,
                level: 7
            }
            .value(),
            0x4007
        );
    }

    #[test]
    fn every_class_and_level_round_trips() {
        for c in 0..4 {
            let class = IoPrioClass::from_number(c).unwrap();
            assert_eq!(class.number(), c);
            for level in 0..IOPRIO_NR_LEVELS {
                let p = IoPrio::new(class, level).unwrap();
                assert_eq!(IoPrio::from_value(p.value()), Some(p));
            }
        }
    }

    #[test]
    fn invalid_values_are_refused() {
        assert_eq!(IoPrio::new(Be, 8), None);
        assert_eq!(IoPrioClass::from_number(4), None);
        assert_eq!(IoPrio::from_value(4 << 13), None, "class 4");
        assert_eq!(IoPrio::from_value(7 << 13 | 1), None, "class 7");
        assert_eq!(IoPrio::from_value(2 << 13 | 8), None, "a hint bit");
    }

    #[test]
    fn nice_maps_to_levels() {
        assert_eq!(nice_to_level(-20), 0);
        assert_eq!(nice_to_level(-1), 3);
        assert_eq!(nice_to_level(0), 4);
        assert_eq!(nice_to_level(19), 7);
        assert_eq!(nice_to_level(-100), 0, "clamped");
        assert_eq!(nice_to_level(100), 7, "clamped");
    }

    #[test]
    fn task_default_is_none_served_as_best_effort() {
        let d = IoPrio::task_default();
        assert_eq!((d.class, d.level), (NoClass, 4));
        assert_eq!(
            d.effective(),
            IoPrio {
                class: Be,
                level: 4
            }
        );
        let rt = IoPrio {
            class: Rt,
            level: 1,
        };
        assert_eq!(rt.effective(), rt);
    }

    #[test]
    fn fio_prio_and_prioclass() {
        let p = |c, l| IoPrio { class: c, level: l };
        // Neither: the kernel's default for the task.
        assert_eq!(IoPrio::from_fio(None, None), IoPrio::task_default());
        assert_eq!(IoPrio::fio_value(None, None), 0);
        // Both.
        assert_eq!(IoPrio::from_fio(Some(Rt), Some(3)), p(Rt, 3));
        assert_eq!(IoPrio::fio_value(Some(Rt), Some(3)), 0x2003);
        assert_eq!(IoPrio::from_fio(Some(Idle), Some(7)), p(Idle, 7));
        // prio= alone: best effort at that level.
        assert_eq!(IoPrio::from_fio(None, Some(5)), p(Be, 5));
        assert_eq!(IoPrio::fio_value(None, Some(5)), 0x4005);
        // prioclass= alone: fio's level option defaults to 0.
        assert_eq!(IoPrio::from_fio(Some(Rt), None), p(Rt, 0));
        // prioclass=0 is turned into best effort by fio's ioprio_value.
        assert_eq!(IoPrio::from_fio(Some(NoClass), Some(2)), p(Be, 2));
        assert_eq!(IoPrio::from_fio(Some(NoClass), None), p(Be, 0));
    }
}
