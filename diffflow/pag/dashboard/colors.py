"""One colour per activity type, the same in the page (sent with its state) and in
``pag plot``'s PNG.

>>> COLORS["Processing"]
'#1f77b4'
"""
COLORS = {"Processing": "#1f77b4", "Scheduling": "#9467bd", "Spinning": "#bcbd22",
          "Waiting": "#c7c7c7", "Busy": "#8c564b", "DataMessage": "#2ca02c",
          "ControlMessage": "#d62728", "Serialization": "#ff7f0e", "Deserialization": "#e377c2",
          "Buffer": "#17becf", "Input": "#7f7f7f", "BarrierProcessing": "#aec7e8",
          "FaultTolerance": "#ffbb78", "Unknown": "#555555"}
