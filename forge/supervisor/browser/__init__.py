"""Browser tabs on the socket: `service` (the verbs over one browser host worker per profile,
composed of `hosts`, `fanout`, `tabs`, `views`, `gestures`, `asks` and `tabsound`), `tabroles`
(who views, controls and sizes a tab: pure) and `sound` (the audio worker's sinks).
"""
